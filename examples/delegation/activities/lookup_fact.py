"""Example activity: answers from a small offline table, so the example runs anywhere."""
import json
import sys

FACTS = {
    "boiling point of water": "Water boils at 100 °C (212 °F) at sea level.",
    "speed of light": "Light travels at 299,792,458 m/s in a vacuum.",
}

call = json.load(sys.stdin)
topic = call["arguments"]["topic"].strip().lower()
fact = FACTS.get(topic)
if fact is None:
    print(json.dumps({"status": "error", "error": f"No fact about {topic!r}; try one of {sorted(FACTS)}."}))
else:
    print(json.dumps({"status": "success", "result": fact}, ensure_ascii=False))

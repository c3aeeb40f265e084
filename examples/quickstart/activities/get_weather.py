"""Example activity: reads the call on stdin, prints a ToolResult on stdout.

A real activity would ask a weather service; this one answers from a small table so that the
example runs anywhere, offline.
"""
import json
import sys

TABLE = {"oslo": (7, "cloudy"), "lisbon": (19, "sunny"), "nairobi": (24, "light rain")}

call = json.load(sys.stdin)
args = call["arguments"]
place = args["location"]
known = TABLE.get(place.strip().lower())
if known is None:
    print(json.dumps({"status": "error", "error": f"No weather data for {place!r}; try Oslo, Lisbon or Nairobi."}))
    sys.exit(0)
celsius, sky = known
temperature = celsius if args.get("units", "celsius") == "celsius" else round(celsius * 9 / 5 + 32)
unit = "°C" if args.get("units", "celsius") == "celsius" else "°F"
print(json.dumps({"status": "success", "result": json.dumps({"location": place, "temperature": f"{temperature} {unit}", "sky": sky}, ensure_ascii=False)}))

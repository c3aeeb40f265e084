"""Example activity: a tiny in-memory knowledge base searched by word overlap."""
import json
import sys

ARTICLES = [
    ("Umbrella policy", "Umbrellas are lent at the front desk and returned within a week."),
    ("Password reset", "Use the 'Forgot password' link; the reset mail arrives within five minutes."),
    ("Opening hours", "The office is open 8:00 to 17:00 on weekdays."),
]

call = json.load(sys.stdin)
args = call["arguments"]
words = set(args["query"].lower().split())
scored = sorted(
    ((len(words & set((title + " " + body).lower().split())), title, body) for title, body in ARTICLES),
    reverse=True,
)
hits = [{"title": t, "text": b} for score, t, b in scored if score > 0][: args.get("limit", 10)]
print(json.dumps({"status": "success", "result": json.dumps(hits)}))

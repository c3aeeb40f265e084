"""Example activity: files a support ticket and answers with its number and title.

The number is derived from the call's idempotency key, so a call that is run again after a
crash answers with the same ticket instead of filing a second one.
"""
import hashlib
import json
import sys

call = json.load(sys.stdin)
args = call["arguments"]
number = int(hashlib.sha256(call["idempotency_key"].encode()).hexdigest()[:6], 16) % 100000
ticket = {
    "number": f"T-{number:05d}",
    "title": args["title"],
    "priority": args.get("priority", "medium"),
    "category": args["category"],
}
print(json.dumps({"status": "success", "result": json.dumps(ticket)}))

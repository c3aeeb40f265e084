"""Example activity: acknowledges a report (the runtime ends the session on its call)."""
import json
import sys

json.load(sys.stdin)
print(json.dumps({"status": "success", "result": "reported"}))

"""Example activity: the current time in ISO 8601 (UTC)."""
import datetime
import json
import sys

json.load(sys.stdin)
now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
print(json.dumps({"status": "success", "result": now.isoformat()}))

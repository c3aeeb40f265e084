"""Waits a second, then answers."""
import json
import sys
import time

json.load(sys.stdin)
time.sleep(1)
json.dump({"status": "success", "result": "Answered after a second."}, sys.stdout)

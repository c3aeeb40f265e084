"""Answers with the arguments it was given."""
import json
import sys

print(json.dumps({"status": "success", "result": json.dumps(json.load(sys.stdin))}))

"""Counts one more change in the description of the definition file named on the command line
(a path under the project), writing it whole in one step so a load never sees half a file."""
import json
import os
import re
import sys

path = sys.argv[1]
with open(path) as f:
    definition = json.load(f)
count = int(re.search(r"Changed (\d+) times", definition["description"]).group(1)) + 1
definition["description"] = re.sub(
    r"Changed \d+ times", f"Changed {count} times", definition["description"]
)
# Written beside the project's `agents/` folder, then moved in: the move is atomic.
scratch = f".{os.path.basename(path)}.new"
with open(scratch, "w") as f:
    json.dump(definition, f, indent=2)
os.replace(scratch, path)
json.dump({"status": "success", "result": f"Changed {count} times."}, sys.stdout)

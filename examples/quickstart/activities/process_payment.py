"""Example activity: charges a payment with the key it was given.

The key arrives in the call's `variables` (the tool declares PAYMENT_API_KEY as a secret); it is
never printed. This example only pretends to charge, and answers with a transaction id derived
from the idempotency key, so a retried call gets the same id.
"""
import hashlib
import json
import sys

call = json.load(sys.stdin)
key = call.get("variables", {}).get("PAYMENT_API_KEY")
if not key:
    print(json.dumps({"status": "error", "error": "PAYMENT_API_KEY was not given to this call."}))
    sys.exit(0)
args = call["arguments"]
transaction = "tx_" + hashlib.sha256(call["idempotency_key"].encode()).hexdigest()[:12]
print(json.dumps({"status": "success", "result": json.dumps({"transaction": transaction, "amount": args["amount"], "currency": args["currency"]})}))

"""The official openai Python SDK's decisions client against a server of POST /v1/decisions.

Usage: openai_decisions_client.py BASE_URL KEY MODE
  MODE "full": a predicate, a choice (one value a boolean), a score; then a request the server
  refuses as invalid, a wrong key and an unknown model, each caught as the SDK's own error type.
  MODE "refusal": a predicate and a choice, where the server is expected to refuse the predicate.
Prints one JSON object: each answer as the SDK typed it, and the name of each error's class.
"""

import json
import sys

import openai

base_url, key, mode = sys.argv[1], sys.argv[2], sys.argv[3]
client = openai.OpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=120)
TICKET = "Hi, I was charged twice for my March invoice and the refund I was promised still has not arrived."


def answers(decision):
    return [
        {k: v for k, v in a.model_dump().items() if v is not None} | {"class": type(a).__name__}
        for a in decision.answers
    ]


def error_class(**kwargs):
    try:
        client.decisions.create(**kwargs)
    except openai.APIStatusError as e:
        return {"class": type(e).__name__, "status": e.status_code, "body": e.body}
    return {"class": None}


out = {}
predicate = {"type": "predicate", "name": "refund", "instructions": "Is the customer asking for a refund?"}
choice = {
    "type": "choice",
    "name": "team",
    "instructions": "Which team should handle this ticket?",
    "choices": [
        {"value": "billing", "description": "payments, invoices and refunds"},
        {"value": "engineering", "description": "bugs and outages"},
        {"value": False, "description": "no team"},
    ],
}
if mode == "full":
    score = {
        "type": "score",
        "name": "urgency",
        "instructions": "How urgent is this ticket?",
        "levels": [{"label": "low"}, {"label": "medium"}, {"label": "high", "description": "money is owed"}],
    }
    d = client.decisions.create(model="gpt-6-luna", input=TICKET, questions=[predicate, choice, score])
    out["model"] = d.model
    out["answers"] = answers(d)
    out["usage"] = d.usage.model_dump()
    out["invalid"] = error_class(
        model="system1", input=TICKET, questions=[{"type": "choice", "instructions": "Which?", "choices": [{"value": "a"}]}]
    )
    out["unknown_model"] = error_class(model="gpt-7", input=TICKET, questions=[predicate])
    wrong = openai.OpenAI(base_url=base_url, api_key="not-the-key", max_retries=0)
    try:
        wrong.decisions.create(model="system1", input=TICKET, questions=[predicate])
        out["wrong_key"] = {"class": None}
    except openai.APIStatusError as e:
        out["wrong_key"] = {"class": type(e).__name__, "status": e.status_code}
else:
    messages = [{"role": "user", "content": [{"type": "input_text", "text": TICKET}]}]
    d = client.decisions.create(model="system1", input=messages, questions=[predicate, choice])
    out["answers"] = answers(d)
print(json.dumps(out))

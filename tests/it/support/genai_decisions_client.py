"""google-genai 3.3.0's decisions client (the Gemini Developer API, keyed) pointed at a local base
URL: lists the models, then asks one decision of one yes/no (noul) question on a text input, and
prints the model names and the typed answers as one JSON line.

Usage: genai_decisions_client.py BASE_URL KEY INPUT QUESTION
"""

import json
import sys

from google import genai
from google.genai import types

base_url, key, text, question = sys.argv[1:5]
client = genai.Client(api_key=key, http_options=types.HttpOptions(base_url=base_url))
models = [m.name for m in client.models.list()]
got = client.decisions.create(
    model="models/gemini-decision-1",
    input=text,
    questions={"decision": {"type": "noul", "instructions": question}},
)
answers = {k: v.model_dump(exclude_none=True) for k, v in got.answers.items()}
print(json.dumps({"models": models, "answers": answers}))

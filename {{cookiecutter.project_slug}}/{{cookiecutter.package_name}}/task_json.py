"""JSON structured output: what the model is asked and which columns a row needs.

Row contract: ``question`` (a text to extract from, with what to extract), ``schema`` (a JSON Schema document as a
string) and ``answer`` (the expected JSON document as a string). There is no standard hub dataset with this shape;
the default is the shipped sample file, and any local JSONL/Parquet/CSV with these columns works.
"""

from __future__ import annotations

import json

from .answer_format import FORMAT

INSTRUCTION = (
    "You extract structured data. Read the text, reason briefly, then put a single JSON document that is valid "
    "against the given JSON Schema in the answer block, with no other text in it."
)
SYSTEM_PROMPT = FORMAT.system_prompt(INSTRUCTION)
REQUIRED_COLUMNS = ("question", "schema", "answer")


def normalize(row: dict) -> dict:
    """Local rows already follow the contract."""
    return row


def from_hub_row(row: dict) -> dict:
    """Rows are expected to follow the contract already; schemas and answers given as objects are serialised."""
    out = dict(row)
    for key in ("schema", "answer"):
        if not isinstance(out[key], str):
            out[key] = json.dumps(out[key])
    return out


def user_message(row: dict) -> str:
    return f"{str(row['question']).strip()}\nJSON Schema:\n{row['schema']}"


def gold_completion(row: dict) -> str:
    """A well-formed completion that answers the row with its gold document."""
    doc = json.dumps(json.loads(row["answer"]), ensure_ascii=False)
    return f"<reasoning>\nExtract the fields the schema asks for.\n</reasoning>\n<answer>\n{doc}\n</answer>"

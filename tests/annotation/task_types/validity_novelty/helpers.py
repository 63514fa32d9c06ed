"""Shared-task rows for the ValNov tests (quoted commas, a newline inside a field, non-ASCII text, extra columns)."""

HEADER = "topic,Premise,Conclusion,Validity,Validity-Confidence,Novelty,Novelty-Confidence,Topic-in-dev-split,note"
ROWS = [
    'Twin Towers reconstruction,"Pentagon, hardly a symbol of peace, has been rebuilt. Twin towers weren\'t.",'
    "Pentagon rebuild sends wrong message of peace,1,majority,1,majority,no,",
    'Twin Towers reconstruction,"Pentagon, hardly a symbol of peace, has been rebuilt. Twin towers weren\'t.",'
    'Twin towers are hardly a symbol of peace,-1,very confident,-1,majority,no,"a ""quoted"" note"',
    'Zoos,"Zoos protect endangered species.\nThey also educate children.",Zoos are useful,1,very confident,'
    "-1,confident,yes,",
    "Café culture,Cafés in Zürich are crowded on Sundays — everybody goes out.,People like cafés,0,defeasible,"
    "0,defeasible,yes,tie",
    "Zoos,Zoos keep animals in small cages.,Zoos are cruel,1,confident,1,very confident,yes,",
]


def csv_text(rows=ROWS, header=HEADER):
    return header + "\n" + "\n".join(rows) + "\n"


def write(tmp_path, text, name="valnov.csv", encoding="utf-8"):
    path = tmp_path / name
    path.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return path

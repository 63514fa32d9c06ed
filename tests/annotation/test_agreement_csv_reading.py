"""The agreement CLI's vectorised CSV reading (issue 25): the same alpha as the `krippendorff` package on a generated
matrix with missing cells at every level, and the same ``file:line: reason`` errors for bad cells."""

import io
import json

import krippendorff
import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.agreement.io import read_matrix_csv


def write_matrix(path, rows, units):
    lines = ["coder," + ",".join(units)]
    lines += [f"c{i}," + ",".join(row) for i, row in enumerate(rows)]
    path.write_text("\n".join(lines) + "\n")


def cells(X, fmt):
    return [["" if v != v else fmt(v) for v in row] for row in X]


def generated(rng, coders=6, units=3000, missing=0.2, real=False):
    truth = rng.integers(1, 6, units)
    X = np.where(rng.random((coders, units)) < 0.7, truth, rng.integers(1, 6, (coders, units))).astype(float)
    if real:
        X = X + rng.random((coders, units))
    X[rng.random(X.shape) < missing] = np.nan
    return X


def run_alpha(path, level):
    out = io.StringIO()
    call_command("agreement", "alpha", "--file", str(path), "--level", level, "--json", stdout=out)
    return json.loads(out.getvalue())


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_alpha_from_csv_equals_the_package(tmp_path, level):
    rng = np.random.default_rng(7)
    X = generated(rng)
    units = [f"u{i}" for i in range(X.shape[1])]
    p = tmp_path / "M.csv"
    write_matrix(p, cells(X, lambda v: str(int(v))), units)
    res = run_alpha(p, level)
    assert res["alpha"] == pytest.approx(krippendorff.alpha(X, level_of_measurement=level), abs=1e-9)
    assert res["n_units_total"] == X.shape[1] and res["n_coders"] == X.shape[0]
    table = read_matrix_csv(str(p), level)
    np.testing.assert_array_equal(np.isnan(table.matrix), np.isnan(X))
    assert table.units == units and table.lines == list(range(2, X.shape[0] + 2))


def test_many_distinct_real_values_and_labels(tmp_path):
    """A row of mostly distinct values takes the other vectorised path; nominal labels (words, padded with blanks,
    one row short) are coded the same as the package codes them."""
    rng = np.random.default_rng(3)
    X = generated(rng, coders=4, units=60, real=True)  # the package needs units x values^2 floats
    p = tmp_path / "R.csv"
    write_matrix(p, cells(X, lambda v: repr(float(v))), [f"u{i}" for i in range(X.shape[1])])
    assert run_alpha(p, "interval")["alpha"] == pytest.approx(
        krippendorff.alpha(X, level_of_measurement="interval"), abs=1e-9
    )
    names = np.array(["", "pro", "con", "none", "maybe", "yes"], dtype=object)
    codes = generated(rng, coders=5, units=1500)
    labels = [[f" {names[int(v)]} " if v == v else "" for v in row] for row in codes]
    labels[-1] = labels[-1][:-3]  # a short row: its last cells are missing
    codes[-1, -3:] = np.nan
    q = tmp_path / "L.csv"
    write_matrix(q, labels, [f"u{i}" for i in range(codes.shape[1])])
    assert run_alpha(q, "nominal")["alpha"] == pytest.approx(
        krippendorff.alpha(codes, level_of_measurement="nominal"), abs=1e-9
    )
    table = read_matrix_csv(str(q), "nominal")
    assert table.labels == sorted(set(names[1:]))
    present = ~np.isnan(codes)
    assert (table.data[present] == names[codes[present].astype(int)]).all()
    assert all(v is None for v in table.data[~present])


def test_quoted_and_crlf_files_read_the_same(tmp_path):
    plain = tmp_path / "plain.csv"
    plain.write_text("coder,u1,u2,u3\nA,1,2,\nB,1,3,2\nC,,3,2\n")
    quoted = tmp_path / "quoted.csv"
    quoted.write_bytes(b'coder,"u1",u2,u3\r\n"A",1,"2",\r\nB,1,3,2\r\n\r\nC,,3,2\r\n')
    a, b = read_matrix_csv(str(plain), "interval"), read_matrix_csv(str(quoted), "interval")
    np.testing.assert_array_equal(a.matrix, b.matrix)
    assert a.units == b.units and a.coders == b.coders
    assert b.lines == [2, 3, 5]


@pytest.mark.parametrize(
    "row,level,message",
    [
        ("A,1,2,x,4", "interval", ":3: unit u3: 'x' is not a number (interval data)"),
        ("A,1,2,nan,4", "ordinal", ":3: unit u3: 'nan' is not a finite number"),
        ("A,1,inf,3,4", "interval", ":3: unit u2: 'inf' is not a finite number"),
        ("A,1,2,3,-4", "ratio", ":3: unit u4: ratio data must be non-negative, got -4"),
        ("A,1,2,3,4,5", "nominal", ":3: 5 values but the header names 4 units"),
        (",1,2,3,4", "nominal", ":3: the coder name is empty"),
        ("B,1,2,3,4", "nominal", ":3: coder 'B' already has a row (line 2)"),
    ],
)
def test_bad_cell_names_file_line_and_unit(tmp_path, row, level, message):
    """The errors the cell-by-cell reader gave, from the vectorised one, in a long file (the fast paths run)."""
    p = tmp_path / "bad.csv"
    filler = ",".join(["1", "2", "3", "4"])
    p.write_text("coder,u1,u2,u3,u4\nB," + filler + "\n" + row + "\nC," + filler + "\n")
    with pytest.raises(CommandError) as e:
        run_alpha(p, level)
    assert e.value.returncode == 2
    assert str(e.value).startswith(str(p) + message), str(e.value)


def test_bad_cell_in_a_wide_row(tmp_path):
    units = [f"u{i}" for i in range(5000)]
    good = [str(i % 5 + 1) for i in range(5000)]
    bad = list(good)
    bad[4321] = "four"
    p = tmp_path / "wide.csv"
    write_matrix(p, [good, good, bad], units)
    with pytest.raises(CommandError) as e:
        run_alpha(p, "interval")
    assert str(e.value).startswith(f"{p}:4: unit u4321: 'four' is not a number (interval data)")
    blank = list(good)
    blank[7] = "  "  # a cell of blanks is missing, as before
    write_matrix(p, [good, blank], units)
    assert np.isnan(read_matrix_csv(str(p), "interval").matrix[1, 7])


def test_bad_utf8_names_its_line(tmp_path):
    p = tmp_path / "latin1.csv"
    p.write_bytes(b"coder,u1,u2\nA,1,2\nB,1,\xe92\n")
    with pytest.raises(CommandError) as e:
        run_alpha(p, "nominal")
    assert e.value.returncode == 2 and str(e.value).startswith(f"{p}:3: not a readable CSV file")

"""Discrete Bayesian networks and the BIF file format (bnlearn repository dialect).

A `Network` holds, for every node i, its name, its state names, its parents (node
indices) and its conditional probability table ``cpts[i]`` of shape
``(r_p1, ..., r_pq, r_i)`` (float64): ``cpts[i][s_p1, ..., s_pq, :]`` is the
distribution of node i given that its parents p1..pq (in the order of ``parents[i]``)
are in states s_p1..s_pq. It is what `bigbn.tools.simulate` samples data from.

`read_bif` reads the BIF text used by the bnlearn Bayesian Network Repository::

    network unknown {
    }
    variable X {
      type discrete [ 2 ] { a, b };
    }
    probability ( X | P1, P2 ) {
      (p1state, p2state) 0.1, 0.9;
      default 0.5, 0.5;
    }
    probability ( R ) {
      table 0.3, 0.7;
    }

``property`` lines and ``//`` / ``/* */`` comments are ignored. A ``table`` line is
accepted for nodes without parents only (its order for conditional tables differs
between tools). The networks bundled in ``bigbn/networks/`` (see its README.md for
their provenance) can be named instead of a path: ``read_bif("asia")``.

`format_bif` / `write_bif` write that dialect (names it cannot hold refused, one line);
`format_xmlbif` / `write_xmlbif` write XMLBIF 0.3 (pgmpy, Weka), which holds any name.
"""

from __future__ import annotations

import gzip
import math
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bigbn.errors import DataError
from bigbn.io.data import check_level, check_name

NETWORKS_DIR = Path(__file__).parent.parent / "networks"

#: Largest deviation of a CPT row sum from 1 that is accepted (then renormalised);
#: the repository files are written with a few decimals.
ROW_SUM_TOLERANCE = 1e-3

#: Most cells one conditional probability table may have (2^27: 1 GiB of float64). A
#: ``default`` row fills every parent configuration not listed, so a few lines of text
#: can ask for a table of 1000^6 cells; `parse_bif` refuses such a table, naming its
#: line, before allocating it (numpy's MemoryError was a traceback). The largest table
#: of the bundled networks has 1,728 cells.
MAX_CPT_CELLS = 2**27


@dataclass(frozen=True, eq=False)
class Network:
    """A discrete Bayesian network: structure plus conditional probability tables.

    Attributes
    ----------
    names : tuple of str, length n; none empty or twice, none holding a control character
        (`check_variable_names`: as a data file's column names)
    states : tuple of tuple of str; ``states[i]`` are node i's r_i >= 1 state names, none
        empty or twice, none holding a control character (`bigbn.io.data.check_level`: as
        a data file's levels)
    parents : tuple of tuple of int; ``parents[i]`` are node i's parents (node indices)
    cpts : tuple of float64 arrays; ``cpts[i]`` has shape
        ``tuple(r[p] for p in parents[i]) + (r[i],)`` and sums to 1 over the last axis.
    """

    names: tuple
    states: tuple
    parents: tuple
    cpts: tuple

    def __post_init__(self):
        n = len(self.names)
        if not (len(self.states) == len(self.parents) == len(self.cpts) == n):
            raise DataError("network: names, states, parents and cpts differ in length")
        check_variable_names(self.names)
        for name, sts in zip(self.names, self.states):
            if not len(sts):
                raise DataError(f"network, variable '{name}': no states (a variable takes at least one)")
            # as a BIF file's "duplicate state names": one name, two codes
            _distinct_texts(sts, lambda k: f"network, variable '{name}', state {k}", "state",
                            lambda where, st: check_level(where, st, "state"), f"network, variable '{name}'")
        for i in range(n):
            ps = self.parents[i]
            if len(set(ps)) != len(ps) or any(not 0 <= p < n or p == i for p in ps):
                raise DataError(f"network: bad parent list for node {self.names[i]!r}")
            shape = tuple(len(self.states[p]) for p in ps) + (len(self.states[i]),)
            cpt = self.cpts[i]
            if cpt.shape != shape:
                raise DataError(
                    f"network: CPT of {self.names[i]!r} has shape {cpt.shape}, "
                    f"expected {shape}"
                )
            if np.any(cpt < 0) or not np.allclose(cpt.sum(axis=-1), 1.0, atol=1e-9):
                raise DataError(
                    f"network: CPT rows of {self.names[i]!r} are not distributions"
                )
        self.topological_order()  # raises on a cycle

    @property
    def n(self) -> int:
        return len(self.names)

    @property
    def cardinalities(self) -> np.ndarray:
        """Number of states of each node; int64, shape (n,)."""
        return np.array([len(s) for s in self.states], dtype=np.int64)

    def arcs(self) -> list[tuple[int, int]]:
        """All arcs (parent, child) as node-index pairs, by child then parent order."""
        return [(p, i) for i in range(self.n) for p in self.parents[i]]

    def adjacency(self) -> np.ndarray:
        """Boolean (n, n) matrix, ``[u, v]`` true iff u is a parent of v."""
        adj = np.zeros((self.n, self.n), dtype=bool)
        for p, c in self.arcs():
            adj[p, c] = True
        return adj

    def topological_order(self) -> list[int]:
        """Node indices, every parent before its children (Kahn; smallest index first)."""
        n = self.n
        indeg = [len(ps) for ps in self.parents]
        children = [[] for _ in range(n)]
        for p, c in self.arcs():
            children[p].append(c)
        ready = sorted(i for i in range(n) if indeg[i] == 0)
        order = []
        while ready:
            i = ready.pop(0)
            order.append(i)
            for c in children[i]:
                indeg[c] -= 1
                if indeg[c] == 0:
                    ready.append(c)
            ready.sort()
        if len(order) != n:
            left = [self.names[i] for i in range(n) if indeg[i] > 0]
            raise DataError("network: the parent relation has a cycle (among "
                            + ", ".join(map(repr, left[:5])) + (", ..." if len(left) > 5 else "") + ")")
        return order


def check_variable_names(names) -> None:
    """A network's variable names as a data file's column names are checked
    (`bigbn.io.data._check_header`): text, none empty, none twice, none holding a control
    character (`check_name`); one line naming the variable's position. A `Network` built
    in Python took any: a name "a\nb" or "a\x1b[2J" went into the BIF and XMLBIF exports,
    the data `bigbn simulate` writes and every printed list."""
    _distinct_texts(names, lambda i: f"network, variable {i}", "variable",
                    lambda where, name: check_name(where, name, "variable name"), "network", "the name ")


def _distinct_texts(texts, where, kind: str, check, whole: str, noun: str = "") -> None:
    """A network's variable names or one variable's states: each text (else one line at
    ``where(k)``, its position), not empty, passing ``check(where(k), text)`` (no control
    character), and none twice (one line at ``whole``, naming both positions)."""
    seen: dict[str, int] = {}
    for k, t in enumerate(texts, start=1):
        if not isinstance(t, str):
            raise DataError(f"{where(k)}: {noun}{t!r} ({type(t).__name__}) is not text")
        if not t:
            raise DataError(f"{where(k)}: empty {kind} name")
        check(where(k), t)
        if t in seen:
            raise DataError(f"{whole}: duplicate {kind} name '{t}' ({kind}s {seen[t]} and {k})")
        seen[t] = k


def bundled_networks() -> list[str]:
    """Names of the networks shipped in ``bigbn/networks/`` (e.g. 'asia', 'alarm')."""
    return sorted(p.name[: -len(".bif.gz")] for p in NETWORKS_DIR.glob("*.bif.gz"))


def resolve_network_path(path_or_name) -> Path:
    """The file a network argument names: an existing path, else a bundled network."""
    p = Path(path_or_name)
    if p.is_file():
        return p
    name = str(path_or_name)
    if name in bundled_networks():
        return NETWORKS_DIR / f"{name}.bif.gz"
    raise DataError(
        f"{name}: no such file and not a bundled network "
        f"(bundled: {', '.join(bundled_networks())})"
    )


_PUNCT = frozenset("{}()[];,|")
_TOKEN = re.compile(r"\s+|//[^\n]*|/\*.*?\*/|[{}()\[\];,|]|[^\s{}()\[\];,|]+", re.S)


def _tokenize(text: str, source: str) -> list[tuple[str, int]]:
    """(token, 1-based line) pairs; whitespace and comments dropped."""
    out = []
    line = 1
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        tok = m.group(0)
        if tok.startswith("/*") and (len(tok) < 4 or not tok.endswith("*/")):
            raise DataError(f"{source}, line {line}: unterminated comment")
        if not (tok.isspace() or tok.startswith("//") or tok.startswith("/*")):
            out.append((tok, line))
        line += tok.count("\n")
        pos = m.end()
    return out


class _Parser:
    def __init__(self, tokens, source):
        self.toks = tokens
        self.pos = 0
        self.source = source

    def error(self, msg, line=None):
        if line is None:
            line = self.line()
        return DataError(f"{self.source}, line {line}: {msg}")

    def line(self):
        """Line of the next token (of the last one at the end of the file)."""
        return self.toks[min(self.pos, len(self.toks) - 1)][1] if self.toks else 1

    def peek(self):
        return self.toks[self.pos][0] if self.pos < len(self.toks) else None

    def next(self):
        if self.pos >= len(self.toks):
            raise self.error("unexpected end of file")
        tok = self.toks[self.pos][0]
        self.pos += 1
        return tok

    def expect(self, want):
        tok = self.next()
        if tok != want:
            self.pos -= 1
            raise self.error(f"expected {want!r}, found {tok!r}")
        return tok

    def word(self):
        tok = self.next()
        if tok in _PUNCT:
            self.pos -= 1
            raise self.error(f"expected a name, found {tok!r}")
        return tok

    def skip_statement(self):
        """Skip to and including the next ';' (a property line)."""
        while self.next() != ";":
            pass

    def skip_block(self):
        """Skip a balanced {...} block (the opening brace is next)."""
        self.expect("{")
        depth = 1
        while depth:
            tok = self.next()
            depth += tok == "{"
            depth -= tok == "}"

    def name_list(self, close):
        """Comma-separated names up to the closing token (consumed)."""
        out = [self.word()]
        while self.peek() == ",":
            self.next()
            out.append(self.word())
        self.expect(close)
        return out

    def numbers(self):
        """Comma-separated floats up to ';' (consumed)."""
        out = []
        while True:
            tok = self.word()
            try:
                out.append(float(tok))
            except ValueError:
                self.pos -= 1
                raise self.error(f"expected a probability, found {tok!r}") from None
            tok = self.next()
            if tok == ";":
                return out
            if tok != ",":
                self.pos -= 1
                raise self.error(f"expected ',' or ';', found {tok!r}")


def parse_bif(text: str, source: str = "<bif>") -> Network:
    """Parse BIF text (see module docstring) into a Network; DataError names the line."""
    ps = _Parser(_tokenize(text, source), source)
    states: dict[str, list[str]] = {}
    # each variable's {state: position}: a row's states are looked up in it, not searched
    # for in the list (30,000 states of a parent took 9 s, quadratic in them)
    position: dict[str, dict[str, int]] = {}
    var_line: dict[str, int] = {}
    probs: dict[str, tuple] = {}  # child -> (parent names, {key: row}, default, line)
    while ps.peek() is not None:
        kw = ps.word()
        if kw == "network":
            ps.word()
            ps.skip_block()
        elif kw == "variable":
            line = ps.line()
            name = ps.word()
            check_name(f"{ps.source}, line {line}", name, "variable name")
            if name in states:
                raise ps.error(f"variable {name!r} declared twice")
            ps.expect("{")
            sts = None
            while ps.peek() != "}":
                sub_line = ps.line()
                sub = ps.word()
                if sub == "type":
                    if sts is not None:  # a second one replaced the first, silently
                        raise ps.error(f"variable {name!r}: a second 'type' line", sub_line)
                    if ps.word() != "discrete":
                        raise ps.error(f"variable {name!r}: only discrete variables are supported")
                    ps.expect("[")
                    count = ps.word()
                    ps.expect("]")
                    ps.expect("{")
                    sts = ps.name_list("}")
                    ps.expect(";")
                    if not count.isdigit() or int(count) != len(sts):
                        raise ps.error(f"variable {name!r}: [ {count} ] but {len(sts)} states",
                                       sub_line)
                    if len(set(sts)) != len(sts):
                        raise ps.error(f"variable {name!r}: duplicate state names", sub_line)
                    for st in sts:
                        check_level(f"{ps.source}, line {sub_line}, variable '{name}'", st, "state")
                else:
                    ps.skip_statement()
            ps.expect("}")
            if sts is None:
                raise ps.error(f"variable {name!r} has no 'type discrete' line")
            states[name] = sts
            position[name] = {s: j for j, s in enumerate(sts)}
            var_line[name] = line
        elif kw == "probability":
            line = ps.toks[ps.pos - 1][1]
            ps.expect("(")
            child = ps.word()
            parents = []
            if ps.peek() == "|":
                ps.next()
                parents = ps.name_list(")")
            else:
                ps.expect(")")
            if child in probs:
                raise ps.error(f"second probability block for {child!r}", line)
            # checked here, with the block's line: `Network` would say only "bad parent list"
            if child in parents:
                raise ps.error(f"{child!r} is given as its own parent", line)
            twice = [p for j, p in enumerate(parents) if p in parents[:j]]
            if twice:
                raise ps.error(f"{child!r}: parent {twice[0]!r} is named twice", line)
            for v in [child, *parents]:
                if v not in states:
                    raise ps.error(f"probability block uses undeclared variable {v!r}")
            ps.expect("{")
            rows: dict[tuple, list[float]] = {}
            default = None
            while ps.peek() != "}":
                tok = ps.peek()
                row_line = ps.line()
                if tok == "(":
                    ps.next()
                    key = tuple(ps.name_list(")"))
                    if len(key) != len(parents):
                        raise ps.error(f"{child!r}: row {key} names {len(key)} parent states, "
                                       f"expected {len(parents)}")
                    for p, s in zip(parents, key):
                        if s not in position[p]:
                            raise ps.error(f"{child!r}: {s!r} is not a state of {p!r}")
                    if key in rows:
                        raise ps.error(f"{child!r}: row {key} given twice")
                    rows[key] = (ps.numbers(), row_line)
                elif tok == "table":
                    ps.next()
                    if parents:
                        raise ps.error(f"{child!r}: 'table' with parents is not supported; "
                                       "give one '(states) p1, p2, ...;' row per configuration")
                    if () in rows:  # a second table replaced the first, silently
                        raise ps.error(f"{child!r}: 'table' given twice")
                    rows[()] = (ps.numbers(), row_line)
                elif tok == "default":
                    ps.next()
                    if default is not None:  # as a second table: the last one won, silently
                        raise ps.error(f"{child!r}: 'default' given twice")
                    default = (ps.numbers(), row_line)
                else:
                    ps.skip_statement()
            ps.expect("}")
            probs[child] = (parents, rows, default, line)
        else:
            ps.pos -= 1
            raise ps.error(f"expected 'network', 'variable' or 'probability', found {kw!r}")

    names = list(states)
    if not names:  # an empty file (or only comments) is no network: a 0-column data set was drawn from it
        raise DataError(f"{source}: no variables (an empty file, or not BIF text?)")
    index = {v: i for i, v in enumerate(names)}
    parents_out, cpts = [], []
    for v in names:
        if v not in probs:
            raise DataError(f"{source}, line {var_line[v]}: variable {v!r} has no probability block")
        pnames, rows, default, line = probs[v]
        r = len(states[v])
        shape = tuple(len(states[p]) for p in pnames) + (r,)
        if math.prod(shape) > MAX_CPT_CELLS:  # Python ints: no overflow before the test
            raise DataError(f"{source}, line {line}: the table of {v!r} would have "
                            f"{' × '.join(map(str, shape))} = {math.prod(shape):.3g} cells, more than "
                            f"{MAX_CPT_CELLS:,}")
        cpt = np.full(shape, np.nan)
        for key, (row, row_line) in rows.items():
            idx = tuple(position[p][s] for p, s in zip(pnames, key))
            cpt[idx] = _check_row(row, r, v, key, source, row_line)
        if default is not None:
            fill = _check_row(default[0], r, v, "default", source, default[1])
            missing = np.isnan(cpt[..., 0])
            cpt[missing] = fill
        if np.isnan(cpt).any():
            raise DataError(f"{source}, line {line}: {v!r} lacks rows for some parent configurations")
        parents_out.append(tuple(index[p] for p in pnames))
        cpts.append(cpt)
    try:
        return Network(tuple(names), tuple(tuple(states[v]) for v in names),
                       tuple(parents_out), tuple(cpts))
    except DataError as e:  # a cycle: say which file ("network: ..." named none)
        raise DataError(f"{source}: {str(e).removeprefix('network: ')}") from None


def _check_row(row, r, child, key, source, line) -> np.ndarray:
    a = np.asarray(row, dtype=np.float64)
    where = f"{source}, line {line}: {child!r} row {key}"
    if a.size != r:
        raise DataError(f"{where} has {a.size} probabilities, expected {r}")
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise DataError(f"{where} has a negative or non-finite probability")
    total = a.sum()
    if abs(total - 1.0) > ROW_SUM_TOLERANCE:
        raise DataError(f"{where} sums to {total:.6g}, not 1")
    if abs(total - 1.0) <= a.size * 2.0**-52:
        # a distribution up to the rounding of its sum (as `format_bif` writes one, every
        # float exactly) is kept as written: divided by a total of 1 ± an ulp, a third of
        # the rows of a network written and read back came back an ulp off
        return a
    return a / total


def read_bif(path_or_name) -> Network:
    """Read a BIF file (``.bif`` or gzipped ``.bif.gz``) or a bundled network by name.

    >>> read_bif("asia").n
    8
    """
    path = resolve_network_path(path_or_name)
    opener = gzip.open if path.name.endswith(".gz") else open
    try:  # utf-8-sig: a byte-order mark (Windows editors) is no part of the first word
        with opener(path, "rt", encoding="utf-8-sig") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read BIF file ({exc})") from None
    except (EOFError, zlib.error) as exc:
        # a truncated .gz raises EOFError (which click reported as a bare "Aborted!"), a
        # damaged one zlib.error (a traceback): neither is an OSError
        raise DataError(f"{path}: cannot read BIF file: a truncated or damaged gzip file ({exc})") from None
    return parse_bif(text, str(path))


#: what BIF (as bigbn and pgmpy read it) holds as a variable name and as a state name
_BIF_NAME = re.compile(r"[^\W][\w.\-]*")
_BIF_STATE = re.compile(r"[^\s{}()\[\];,|\"\x00-\x1f\x7f]+")


def check_bif_names(network: Network) -> None:
    """DataError (one line) for a variable or state name that BIF text cannot hold: a
    name is letters, digits, '_', '.', '-' (not starting with '.' or '-'); a state has no
    space, quote, control character (pgmpy's reader failed on a level "\\x00") or any of
    {}()[];,|, and holds no // or /* (a reader takes that for a
    comment: a level "//note" was written, and the file could not be read back; pgmpy's
    reader strips comments anywhere in a line, so a level "a//b" was refused by it, and two
    levels "a/*b", "c*/d" of a line lost what lay between). XMLBIF holds any name."""
    for v, sts in zip(network.names, network.states):
        if not _BIF_NAME.fullmatch(v) or v.startswith(("-", ".")):
            raise DataError(f"variable {v!r}: BIF names are letters, digits, '_', '.' and '-'; "
                            "rename the column or write XMLBIF (--format xmlbif)")
        for st in sts:
            if not _BIF_STATE.fullmatch(st) or "//" in st or "/*" in st:
                raise DataError(f"variable {v!r}, level {st!r}: a BIF state has no spaces, quotes, control "
                                "characters or any of {}()[];,|, nor // or /*; recode the level or write "
                                "XMLBIF (--format xmlbif)")


def format_bif(network: Network, name: str = "unknown") -> str:
    """BIF text of a network (the dialect `parse_bif` reads; floats written exactly).
    Names BIF cannot hold are refused (`check_bif_names`)."""
    check_bif_names(network)
    lines = [f"network {name} {{", "}"]
    for v, sts in zip(network.names, network.states):
        lines += [f"variable {v} {{",
                  f"  type discrete [ {len(sts)} ] {{ {', '.join(sts)} }};", "}"]
    for i, v in enumerate(network.names):
        ps = network.parents[i]
        cpt = network.cpts[i]
        if not ps:
            lines += [f"probability ( {v} ) {{",
                      f"  table {', '.join(repr(float(x)) for x in cpt)};", "}"]
            continue
        lines.append(f"probability ( {v} | {', '.join(network.names[p] for p in ps)} ) {{")
        for idx in np.ndindex(*cpt.shape[:-1]):
            key = ", ".join(network.states[p][s] for p, s in zip(ps, idx))
            lines.append(f"  ({key}) {', '.join(repr(float(x)) for x in cpt[idx])};")
        lines.append("}")
    return "\n".join(lines) + "\n"


def write_bif(network: Network, path, name: str = "unknown") -> None:
    """Write a network as BIF; gzipped if the path ends in ``.gz``. The text is formed
    first, so a network BIF cannot hold (`check_bif_names`) leaves no file behind (nor an
    older one emptied)."""
    path = Path(path)
    _write_text(path, format_bif(network, name), gz=path.name.endswith(".gz"))


def _write_text(path: Path, text: str, gz: bool = False) -> None:
    """Write a network file (gzipped with ``gz``) through `options.open_output`: a named
    pipe that nothing reads is one line, not a wait."""
    from bigbn.options import open_output

    if gz:
        with open_output(path, "wb") as raw, gzip.GzipFile(str(path), "wb", fileobj=raw) as fh:
            fh.write(text.encode("utf-8"))
        return
    with open_output(path, "w", encoding="utf-8") as fh:
        fh.write(text)


#: what XML 1.0 holds in no form, not even as a character reference: the C0 controls
#: but tab, newline and carriage return, the surrogates, U+FFFE and U+FFFF
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def check_xml_names(network: Network, name: str = "unknown") -> None:
    """DataError (one line) for a network, variable or state name holding a character
    XML 1.0 cannot hold (`NOT_XML`: a control character such as U+0001, which only the
    network's name can still hold (`Network` refuses them in its names and states), a
    lone surrogate, U+FFFE, U+FFFF): written, it left a file that no XML parser reads
    ("not well-formed (invalid token)")."""
    for v, sts in zip(network.names, network.states):
        for what, text in [(f"variable {v!r}", v), *((f"variable {v!r}, level {st!r}", st) for st in sts)]:
            bad = NOT_XML.search(text)
            if bad:
                raise DataError(f"{what}: XML cannot hold the character U+{ord(bad.group()):04X}; rename it "
                                "(XMLBIF is XML 1.0)")
    bad = NOT_XML.search(name)
    if bad:
        raise DataError(f"network name {name!r}: XML cannot hold the character U+{ord(bad.group()):04X}")


def format_xmlbif(network: Network, name: str = "unknown") -> str:
    """XMLBIF 0.3 text of a network (what pgmpy's XMLBIFReader and Weka read): a
    VARIABLE per node with its OUTCOMEs, a DEFINITION per node with its parents as GIVEN
    and its TABLE: for each configuration of the parents (the last parent fastest) the
    child's distribution, floats written exactly. Names and states are XML-escaped (a
    carriage return as &#13;: written as it is, a parser reads it as a line feed, so a
    name "a\rb" came back "a\nb"); one XML cannot hold at all is refused (`check_xml_names`)."""
    from xml.sax.saxutils import escape as xml_escape

    def escape(text: str) -> str:
        return xml_escape(text, {"\r": "&#13;"})

    check_xml_names(network, name)
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', '<BIF VERSION="0.3">', "<NETWORK>",
             f"<NAME>{escape(name)}</NAME>"]
    for v, sts in zip(network.names, network.states):
        lines += ['<VARIABLE TYPE="nature">', f"  <NAME>{escape(v)}</NAME>",
                  *(f"  <OUTCOME>{escape(st)}</OUTCOME>" for st in sts), "</VARIABLE>"]
    for i, v in enumerate(network.names):
        lines += ["<DEFINITION>", f"  <FOR>{escape(v)}</FOR>",
                  *(f"  <GIVEN>{escape(network.names[p])}</GIVEN>" for p in network.parents[i]),
                  f"  <TABLE>{' '.join(repr(float(x)) for x in network.cpts[i].reshape(-1))}</TABLE>",
                  "</DEFINITION>"]
    lines += ["</NETWORK>", "</BIF>"]
    return "\n".join(lines) + "\n"


def write_xmlbif(network: Network, path, name: str = "unknown") -> None:
    """Write a network as XMLBIF 0.3 (`format_xmlbif`; the text formed first, as `write_bif`)."""
    _write_text(Path(path), format_xmlbif(network, name))  # plain text whatever the name (pgmpy reads it so)

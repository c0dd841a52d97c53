"""Characters per second of `tts_kit.text.normalize` against the source article's normaliser.

Builds a mixed Korean/English corpus of at least 1 MB in memory (documents the size of
synthesis requests, generated from templates with a seeded random generator: dates,
times, money, counters, units, phone numbers, acronyms, emoji and plain sentences),
then normalises all of it with both normalisers, alternating runs so that both see the
same machine state. Both get the same documents; the article's normaliser only knows
Korean rules, which is what it was written for.

The first tts_kit round starts with empty number-word caches (``cold``); later rounds
reuse them, as a long-running server does (``warm``). Target: 200,000 chars/s.

Then chars/s per class group: the inputs of each class group of the golden sets
(``tests/golden/text_<lang>.tsv``: years and dates, Roman numerals, web addresses, units,
phone numbers, Korean counters and particles ...), repeated to ``--group-chars``
characters, cold (caches cleared) and warm. These texts are dense with the hard cases, so
they are slower than ordinary text; they say which rules cost what.

Last, a per-class pass table: for each rule or class of the golden sets (issue 14's
groups, issue 24's classes ...), how many rows read exactly as expected.

Usage:
    python bench/normalize_speed.py [--rounds 3] [--min-chars 1000000] [--seed 0] [--profile]
                                    [--group-chars 100000] [--no-groups] [--no-pass-table]
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import pstats
import random
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tts_kit.text import normalize  # noqa: E402
from tts_kit.text import numbers as number_words  # noqa: E402

TARGET_CPS = 200_000


def _article():
    spec = importlib.util.spec_from_file_location("_article", ROOT / "bench/_article_normalizer.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.SupertonicTextNormalizer()


KO_TEMPLATES = (
    "{name}님, {y}년 {m}월 {d}일 {h}:{mi}에 회의가 있습니다.",
    "이번 달 클라우드 비용은 ${usd}였고, 전월 대비 {pct}% 줄었습니다.",
    "{n}개의 요청을 {ms}ms 안에 처리했습니다. RTF는 {rtf}입니다.",
    "FastAPI 서버가 {cpu} vCPU / {gb}GB RAM에서 동작합니다.",
    "고객센터 010-{p1}-{p2}로 전화주세요. 운영 시간은 오전 9:00~오후 6:00입니다.",
    "가격은 {won}원이며, {cnt}명까지 사용할 수 있습니다.",
    "Supertonic 3 모델은 {params}M 파라미터, ONNX 가중치는 약 {mb}MB입니다.",
    "{temp}°C의 날씨에 {km}km를 {hrs}시간 동안 걸었습니다.",
    "원본 영상을 바탕으로 AI의 도움을 받아 작성했습니다. 원본 영상이 기준입니다.",
    "유료 TTS API의 청구서는 큰 부담입니다. 로컬 서버에서 직접 실행하면 비용을 줄일 수 있어요.",
    "AWS와 GCP 중 어디가 더 싼가요? 😀 결론은 {pct}% 차이였습니다 👍",
    "회의록은 {y}.{m:02d}.{d:02d}에 공유했고, 다음 회의는 {m2}월 {d2}일입니다.",
    "사과 {a}개와 배 {b}개를 {cnt}명에게 나눠 주었습니다.",
    "p95 지연 시간은 {ms}ms, 피크 메모리는 {mb}MB였습니다.",
    '<break time="300ms"/> 잠시 후 {h}시 {mi}분에 다시 안내해 드리겠습니다.',
    "버전 v{v1}.{v2}.{v3}에서 Python SDK가 {n}배 빨라졌습니다.",
)
EN_TEMPLATES = (
    "Dr. {name} paid ${usd} on {month} {d}, {y} at {h12}:{mi} pm.",
    "The API handled {n} requests in {ms} ms, about {pct}% faster than in {y0}.",
    "Call us at ({p0}) {p1}-{p2}, Monday to Friday, 9:00 am to 5:30 pm.",
    "Supertonic 3 has {params}M parameters; the ONNX weights take about {mb} MB.",
    "We ran it on {cpu} vCPUs with {gb}GB of RAM and saw an RTF of {rtf}.",
    "The meeting moved from {m}/{d}/{y} to {y}-{m:02d}-{d2:02d}, see section {n}.",
    "It weighs {kg} kg and runs at {temp}°C, e.g. in a warm server room.",
    "In the 1990s, a {gb} GB disk cost ${usd}; now it costs ${cents} cents.",
    "This is the {ordn} release of the SDK, and it's great! 😀",
    "Streaming from memory is much faster than writing files to disk.",
    "NASA and the EU funded {n}% of the R&D budget, i.e. ${mil}M over {a} years.",
    "Mr. {name} lives at {a} Main St., apartment #{b}.",
)
NAMES = ("김민준", "이서연", "박지호", "최유나", "Kim", "Lee", "Park", "Smith", "Jones")
MONTHS = ("January", "March", "June", "August", "October", "December")


def _fill(rng: random.Random, template: str) -> str:
    return template.format(
        name=rng.choice(NAMES), y=rng.randint(1990, 2030), y0=rng.randint(1995, 2025),
        m=rng.randint(1, 12), m2=rng.randint(1, 12), d=rng.randint(1, 28),
        d2=rng.randint(1, 28), h=rng.randint(0, 23), h12=rng.randint(1, 12),
        mi=rng.choice(("00", "05", "15", "30", "45")),
        usd=f"{rng.randint(1, 9999)}.{rng.randint(0, 99):02d}",
        pct=rng.choice((3, 5, 10, 12.5, 25, 48, 50, 99)), n=rng.randint(1, 5000),
        ms=rng.randint(5, 900), rtf=rng.choice(("0.15", "0.28", "0.85", "1.2")),
        cpu=rng.choice((1, 2, 4, 8)), gb=rng.choice((1, 2, 4, 16, 64)),
        p0=rng.randint(200, 999), p1=rng.randint(1000, 9999), p2=rng.randint(1000, 9999),
        won=f"{rng.randint(1, 500) * 100:,}", cnt=rng.randint(1, 99), params=rng.choice((66, 99)),
        mb=rng.choice((201, 305, 350, 890, 920)), temp=rng.randint(-10, 40),
        km=rng.randint(1, 42), hrs=rng.randint(1, 12), a=rng.randint(1, 40),
        b=rng.randint(1, 40), v1=rng.randint(0, 3), v2=rng.randint(0, 20), v3=rng.randint(0, 9),
        month=rng.choice(MONTHS), kg=rng.choice(("1.5", "3", "12", "0.8")),
        cents=rng.randint(1, 99), ordn=rng.choice(("1st", "2nd", "3rd", "21st", "100th")),
        mil=rng.choice(("1.5", "3", "12")),
    )


def build_corpus(min_chars: int = 1_000_000, seed: int = 0) -> list[tuple[str, str]]:
    """``(lang, document)`` pairs (60 % of them Korean), 1-6 sentences each, ``min_chars``
    characters in all."""
    rng = random.Random(seed)
    docs: list[tuple[str, str]] = []
    total = 0
    while total < min_chars:
        lang = "ko" if rng.random() < 0.6 else "en"
        templates = KO_TEMPLATES if lang == "ko" else EN_TEMPLATES
        doc = " ".join(_fill(rng, rng.choice(templates)) for _ in range(rng.randint(1, 6)))
        docs.append((lang, doc))
        total += len(doc)
    return docs


def group_corpora(min_chars: int = 100_000) -> dict[tuple[str, str], list[str]]:
    """``(lang, group) -> texts``: each class group's golden inputs, repeated to
    ``min_chars`` characters (the rows after the ``issue 14 class groups`` line)."""
    out: dict[tuple[str, str], list[str]] = {}
    for lang in ("en", "ko"):
        rows: dict[str, list[str]] = {}
        started = False
        path = ROOT / "tests" / "golden" / f"text_{lang}.tsv"
        for line in path.read_text(encoding="utf-8").splitlines():
            if "issue 14 class groups" in line:
                started = True
            if not started or not line.strip() or line.startswith("#"):
                continue
            group, text, _ = line.split("\t")
            rows.setdefault(group, []).append(_unescape(text))
        for group, texts in rows.items():
            size = sum(len(t) for t in texts)
            out[(lang, group)] = texts * max(1, -(-min_chars // size))
    return out


def group_speeds(min_chars: int = 100_000) -> list[tuple[str, str, int, float, float]]:
    """``(lang, group, chars, cold chars/s, warm chars/s)`` for every class group."""
    rows = []
    for (lang, group), texts in group_corpora(min_chars).items():
        chars = sum(len(t) for t in texts)
        number_words.clear_caches()
        cold = _time(normalize, [(lang, t) for t in texts])
        warm = _time(normalize, [(lang, t) for t in texts])
        rows.append((lang, group, chars, chars / cold, chars / warm))
    return rows


def class_pass_table() -> list[tuple[str, str, int, int]]:
    """``(lang, class, passed, rows)`` for every rule or class of the golden sets: how many
    golden rows `normalize` reads exactly as expected (all of them, when the suite is
    green; the table says where a change of rules broke which class)."""
    out = []
    for lang in ("en", "ko"):
        counts: dict[str, list[int]] = {}
        path = ROOT / "tests" / "golden" / f"text_{lang}.tsv"
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            rule, text, want = line.split("\t")
            text, want = _unescape(text), _unescape(want)
            c = counts.setdefault(rule, [0, 0])
            c[1] += 1
            try:
                c[0] += normalize(text, lang) == want
            except ValueError:
                pass
        out.extend((lang, rule, ok, n) for rule, (ok, n) in counts.items())
    return out


def _unescape(cell: str) -> str:
    """A golden cell's escapes (``\\n``, ``\\t``, ``\\e``, ``\\uXXXX``) as characters."""
    cell = cell.replace("\\n", "\n").replace("\\t", "\t").replace("\\e", "\x1b")
    return re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), cell)


def _time(fn, docs) -> float:
    t0 = time.perf_counter()
    for lang, doc in docs:
        fn(doc, lang)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-chars", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", action="store_true", help="print the top of a cProfile run")
    ap.add_argument("--group-chars", type=int, default=100_000,
                    help="characters per class group (golden inputs repeated)")
    ap.add_argument("--no-groups", action="store_true", help="skip the per-class-group table")
    ap.add_argument("--no-pass-table", action="store_true",
                    help="skip the per-class pass table of the golden sets")
    args = ap.parse_args(argv)

    docs = build_corpus(args.min_chars, args.seed)
    chars = sum(len(d) for _, d in docs)
    nbytes = sum(len(d.encode("utf-8")) for _, d in docs)
    ko_share = sum(len(d) for lang, d in docs if lang == "ko") / chars
    print(f"corpus: {len(docs):,} documents, {chars:,} characters, {nbytes / 1e6:.2f} MB UTF-8, "
          f"{ko_share:.0%} Korean (seed {args.seed})")

    article = _article()

    def art(doc: str, lang: str) -> str:
        return article.normalize(doc)

    normalize("준비", "ko"), normalize("ready", "en")  # build regexes and lexicons once
    number_words.clear_caches()
    kit_times, art_times = [], []
    for r in range(args.rounds):
        kit_times.append(_time(normalize, docs))
        art_times.append(_time(art, docs))
        label = "cold" if r == 0 else "warm"
        print(f"round {r + 1} ({label} caches): tts_kit {chars / kit_times[-1]:>12,.0f} chars/s   "
              f"article {chars / art_times[-1]:>12,.0f} chars/s")

    cold = chars / kit_times[0]
    kit = chars / min(kit_times)
    kit_med = chars / statistics.median(kit_times)
    art_best = chars / min(art_times)
    print(f"tts_kit: best {kit:,.0f} chars/s, median {kit_med:,.0f}, cold {cold:,.0f}")
    print(f"article: best {art_best:,.0f} chars/s")
    paired = statistics.median(a / k for k, a in zip(kit_times, art_times))
    print(f"ratio tts_kit / article: {kit / art_best:.2f}x (best vs best), "
          f"{paired:.2f}x (median of paired rounds), cold round {art_times[0] / kit_times[0]:.2f}x")
    verdict = "meets" if cold >= TARGET_CPS else "MISSES"
    print(f"target {TARGET_CPS:,} chars/s: tts_kit {verdict} it even with cold caches")

    if not args.no_groups:
        print(f"\nper class group (golden inputs repeated to {args.group_chars:,} chars):")
        print(f"{'lang':<5}{'group':<20}{'chars':>9}{'cold chars/s':>15}{'warm chars/s':>15}")
        for lang, group, n, cold_g, warm_g in group_speeds(args.group_chars):
            print(f"{lang:<5}{group:<20}{n:>9,}{cold_g:>15,.0f}{warm_g:>15,.0f}")

    if not args.no_pass_table:
        table = class_pass_table()
        print("\nper class pass rate of the golden sets (tests/golden/text_<lang>.tsv):")
        print(f"{'lang':<5}{'class':<20}{'passed':>8}{'rows':>6}{'rate':>8}")
        for lang, rule, ok, n in table:
            print(f"{lang:<5}{rule:<20}{ok:>8}{n:>6}{ok / n:>8.0%}")
        for lang in ("en", "ko"):
            ok = sum(r[2] for r in table if r[0] == lang)
            n = sum(r[3] for r in table if r[0] == lang)
            print(f"{lang:<5}{'all':<20}{ok:>8}{n:>6}{ok / n:>8.0%}")

    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        _time(normalize, docs[: len(docs) // 4])
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(18)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

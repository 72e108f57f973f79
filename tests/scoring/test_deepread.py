"""Deep Read: Porter stemmer, content words, P&R, HumSent, AutSent, loaders and CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scoring.deepread import (
    STOP_WORDS,
    DeepReadData,
    Prediction,
    Question,
    Story,
    autsent_sentences,
    content_words,
    evaluate_deepread,
    load_deepread_data,
    load_deepread_predictions,
    porter_stem,
    precision_recall,
)
from scoring.errors import InputFormatError
from tests.scoring.helpers import run_cli_text_on_error as run_cli

DATA = Path(__file__).parent / "data"

# Porter (1980): the paper's examples, run through the whole algorithm (the paper shows each step;
# these are the final stems, as Porter's reference implementations also give them).
PORTER_EXAMPLES = """
caresses caress  ponies poni  ties ti  caress caress  cats cat
feed feed  agreed agre  plastered plaster  bled bled  motoring motor  sing sing
conflated conflat  troubled troubl  sized size  hopping hop  tanned tan  falling fall  hissing hiss
fizzed fizz  failing fail  filing file  happy happi  sky sky
relational relat  conditional condit  rational ration  valenci valenc  hesitanci hesit  digitizer digit
conformabli conform  radicalli radic  differentli differ  vileli vile  analogousli analog
vietnamization vietnam  predication predic  operator oper  feudalism feudal  decisiveness decis
hopefulness hope  callousness callous  formaliti formal  sensitiviti sensit  sensibiliti sensibl
triplicate triplic  formative form  formalize formal  electriciti electr  electrical electr  hopeful hope
goodness good  revival reviv  allowance allow  inference infer  airliner airlin  gyroscopic gyroscop
adjustable adjust  defensible defens  irritant irrit  replacement replac  adjustment adjust
dependent depend  adoption adopt  homologou homolog  communism commun  activate activ
angulariti angular  homologous homolog  effective effect  bowdlerize bowdler
probate probat  rate rate  cease ceas  controll control  roll roll
generalizations gener  oscillators oscil  generate gener  general gener
""".split()


@pytest.mark.parametrize(("word", "stem"), list(zip(PORTER_EXAMPLES[::2], PORTER_EXAMPLES[1::2])))
def test_porter_stems_the_papers_examples(word: str, stem: str) -> None:
    assert porter_stem(word) == stem


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("a", "a"), ("is", "is"), ("as", "as"),  # one or two letters: untouched
        ("cement", "cement"),  # step 4: the longest suffix (-ement) fails m > 1 and nothing shorter is tried
        ("adoption", "adopt"), ("fusion", "fusion"), ("decision", "decis"),  # -ion needs s or t before it
        ("feeds", "feed"), ("yes", "ye"), ("syzygy", "syzygi"),
        ("abli", "abli"),  # the published step 2 (abli -> able); the reference code's bli -> ble differs
        ("toy", "toi"), ("boy", "boi"), ("say", "sai"), ("crying", "cry"),
        ("agreement", "agreement"), ("national", "nation"),
    ],
)
def test_porter_edge_cases(word: str, stem: str) -> None:
    assert porter_stem(word) == stem


def test_porter_agrees_with_nltks_original_algorithm_on_every_word_of_three_letters_or_more() -> None:
    """Why the stemmer is our own and not NLTK's (pinned for cmrc2018): on the 21,679 distinct words of
    SQuAD v1.1 dev's passages NLTK's ``ORIGINAL_ALGORITHM`` mode differs only on words of one or two
    letters ("is" -> "i", "us" -> "u"), which Porter's reference implementation leaves alone, as this
    does; and the scoring library keeps to its two dependencies.  Here a word list of every suffix rule."""
    porter = pytest.importorskip("nltk.stem.porter")
    nltk = porter.PorterStemmer(mode=porter.PorterStemmer.ORIGINAL_ALGORITHM)
    words = ("caresses ponies ties caress cats feed agreed plastered bled motoring sing conflated troubled "
             "sized hopping tanned falling hissing fizzed failing filing happy sky relational conditional "
             "rational valenci hesitanci digitizer conformabli radicalli differentli vileli analogousli "
             "vietnamization predication operator feudalism decisiveness hopefulness callousness formaliti "
             "sensitiviti sensibiliti triplicate formative formalize electriciti electrical hopeful goodness "
             "revival allowance inference airliner gyroscopic adjustable defensible irritant replacement "
             "adjustment dependent adoption homologou communism activate angulariti homologous effective "
             "bowdlerize probate rate cease controll roll generalizations oscillators").split()
    differ = [(w, porter_stem(w), nltk.stem(w)) for w in words if porter_stem(w) != nltk.stem(w)]
    assert not differ, differ
    assert (porter_stem("is"), nltk.stem("is")) == ("is", "i")  # the one kind of difference, and why


def test_content_words_drop_stop_words_and_count_repeats_once() -> None:
    assert content_words("The dogs and the Dog were barking at THE mailman.") == {"dog", "bark", "mailman"}
    assert content_words("It is his and theirs, which they have done to us.") == frozenset()
    assert content_words("") == frozenset()


def test_stop_list_is_the_papers() -> None:
    for word in ("be", "was", "has", "does", "did", "i", "them", "my", "its", "theirs",
                 "and", "or", "to", "in", "at", "of", "a", "the", "this", "that", "which"):
        assert word in STOP_WORDS
    for word in ("an", "on", "not", "himself", "what", "who", "will"):
        assert word not in STOP_WORDS


def test_stop_words_are_matched_before_stemming() -> None:
    # "does" would stem to "doe"; "doe" (the deer) is a content word.
    assert content_words("does") == frozenset() and content_words("doe") == {"doe"}


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("John's dog", {"john", "dog"}),
        ("It didn't bark", {"not", "bark"}),
        ("She\u2019ll come", {"will", "come"}),
        ("they're here, we've left, I'd go, I'm late", {"here", "left", "go", "late"}),
        ("at five o'clock", {"five", "oclock"}),
        ("3 dogs, 12:30", {"3", "dog", "12", "30"}),
        ("Caf\u00e9 na\u00efve", {"caf\u00e9", "na\u00efv"}),
    ],
)
def test_tokens_and_clitics(text: str, words: set[str]) -> None:
    assert content_words(text) == words


def test_precision_and_recall_on_sets() -> None:
    response = content_words("three dogs dogs and two cats")
    key = content_words("the three dogs")
    assert precision_recall(response, key) == (2 / 4, 1.0)
    assert precision_recall(frozenset(), key) == (0.0, 0.0)


# --- evaluation ---


def story() -> Story:
    return Story(id="s", sentences={
        "1": "Long ago, a girl named Kate lived in Boston.",
        "2": "She had three noisy dogs.",
        "3": "The dogs barked at the mailman every morning.",
        "4": "The mailman brought the dogs bones.",
    })


def data(*questions: Question) -> DeepReadData:
    return DeepReadData(questions=list(questions), stories={"s": story()})


def test_the_key_with_the_best_recall_then_precision_is_used() -> None:
    q = Question(id="q", answers=("big brown dog", "dog", "dog bone"))
    result = evaluate_deepread(data(q), {"q": Prediction(answer="the dog")})
    record = result.per_example[0]
    # recalls: 1/3, 1, 1/2 -> key 1.
    assert record["key"] == 1 and record["recall"] == 100.0 and record["precision"] == 100.0
    result = evaluate_deepread(data(q), {"q": Prediction(answer="dog bone big")})
    # recalls: 2/3, 1, 1 -> keys 1 and 2 tie on recall; precision 1/3 vs 2/3 picks key 2.
    assert result.per_example[0]["key"] == 2
    assert result.per_example[0]["precision"] == pytest.approx(200 / 3, rel=1e-12)


def test_scores_are_macro_averages_times_100() -> None:
    result = evaluate_deepread(
        data(Question(id="a", answers=("Kate",)), Question(id="b", answers=("three dogs",))),
        {"a": Prediction(answer="Kate"), "b": Prediction(answer="dogs barked")},
    )
    assert result.metrics["precision"] == pytest.approx((1.0 + 0.5) / 2 * 100, rel=1e-12)
    assert result.metrics["recall"] == pytest.approx((1.0 + 0.5) / 2 * 100, rel=1e-12)
    assert "HumSent" not in result.metrics and "AutSent" not in result.metrics  # no sentence picks
    assert result.metrics["total"] == 2 and result.metrics["scored"] == 2


def test_a_missing_prediction_scores_zero_with_a_warning() -> None:
    result = evaluate_deepread(data(Question(id="a", answers=("Kate",)), Question(id="b", answers=("dogs",))),
                               {"a": Prediction(answer="Kate")})
    assert result.metrics["recall"] == 50.0
    assert result.per_example[1] == {"id": "b", "precision": 0.0, "recall": 0.0, "key": 0, "missing": True}
    assert "1 question(s) have no prediction" in result.warnings[0]


def test_a_key_without_content_words_is_left_out_of_p_and_r() -> None:
    result = evaluate_deepread(data(Question(id="a", answers=("It was him.",)), Question(id="b", answers=("Kate",))),
                               {"a": Prediction(answer="him"), "b": Prediction(answer="Kate")})
    assert result.metrics["recall"] == 100.0 and result.metrics["scored"] == 1 and result.metrics["total"] == 2
    assert result.per_example[0]["recall"] is None
    assert "no content word in any answer key" in result.warnings[0]
    only_unscorable = evaluate_deepread(data(Question(id="a", answers=("it",))), {"a": Prediction(answer="x")})
    assert only_unscorable.metrics["recall"] != only_unscorable.metrics["recall"]  # NaN: nothing to average


def test_humsent_and_autsent() -> None:
    questions = (
        Question(id="1", answers=("Kate",), story="s", answer_sentences=frozenset({"1"})),
        Question(id="2", answers=("three dogs", "3 dogs"), story="s", answer_sentences=frozenset({"2"})),
        Question(id="3", answers=("the mailman",), story="s", answer_sentences=frozenset({"3"})),
        Question(id="4", answers=("bones",), story="s", answer_sentences=frozenset({"4"})),
    )
    predictions = {"1": Prediction(sentence="1"), "2": Prediction(sentence="3"),
                   "3": Prediction(answer="The mailman was barked at", sentence="3")}
    result = evaluate_deepread(data(*questions), predictions)
    assert result.metrics["HumSent"] == 50.0
    assert result.metrics["AutSent"] == 50.0  # question 2: sentence 2 has the best recall, not 3
    # A sentence pick without answer text is scored on the sentence: 1 of its 7 content words.
    assert result.per_example[0]["precision"] == pytest.approx(100 / 7, rel=1e-12)
    assert result.per_example[2]["precision"] == 50.0  # the answer text, not the sentence
    loose = evaluate_deepread(data(*questions), predictions, autsent_threshold=0.5)
    assert loose.metrics["AutSent"] == 75.0
    assert [r["autsent"] for r in loose.per_example] == [100.0, 100.0, 100.0, 0.0]


def test_autsent_marks_every_best_sentence_and_none_without_overlap() -> None:
    keys = [content_words("the mailman")]
    assert autsent_sentences(story(), keys) == {"3", "4"}
    assert autsent_sentences(story(), [content_words("a cat")]) == frozenset()
    assert autsent_sentences(story(), [content_words("dogs bones")], threshold=0.5) == {"2", "3", "4"}
    assert autsent_sentences(story(), [content_words("dogs bones"), content_words("Kate")]) == {"1", "4"}


def test_the_papers_library_of_congress_example() -> None:
    # Hirschman et al. (1999), section 2 and its Figure 2.
    congress = Story(id="lc", sentences={
        "1": "But the Library of Congress was built for all the people.",
        "2": "From the start, it was our national library.",
    })
    assert content_words(congress.sentences["1"]) == {"but", "librari", "congress", "built", "for", "all", "peopl"}
    # The paper prints 1/6 = 17% for sentence 2's precision, but its own stop list (the, it, was, our)
    # leaves 4 content words: from, start, national, library. So 1/4 here.
    assert content_words(congress.sentences["2"]) == {"from", "start", "nation", "librari"}
    # HumSent: the annotator listed no acceptable sentence for this question (the paper's choice).
    question = Question(id="q", answers=("Library of Congress",), story="lc", answer_sentences=frozenset())
    lc_data = DeepReadData(questions=[question], stories={"lc": congress})
    one = evaluate_deepread(lc_data, {"q": Prediction(sentence="1")}).per_example[0]
    assert one["precision"] == pytest.approx(100 * 2 / 7) and one["recall"] == 100.0
    two = evaluate_deepread(lc_data, {"q": Prediction(sentence="2")}).per_example[0]
    assert two["precision"] == pytest.approx(100 * 1 / 4) and two["recall"] == 50.0
    assert autsent_sentences(congress, [content_words("Library of Congress")]) == {"1"}
    assert (one["autsent"], two["autsent"]) == (100.0, 0.0)
    assert (one["humsent"], two["humsent"]) == (0.0, 0.0)


def test_sentence_metrics_only_cover_questions_with_the_data() -> None:
    questions = (
        Question(id="1", answers=("Kate",), story="s", answer_sentences=frozenset({"1"})),
        Question(id="2", answers=("dogs",), story="s"),  # no human mark: AutSent only
        Question(id="3", answers=("Boston",)),  # no story: P&R only
    )
    predictions = {"1": Prediction(sentence="1"), "2": Prediction(sentence="2"), "3": Prediction(answer="Boston")}
    result = evaluate_deepread(data(*questions), predictions)
    assert result.metrics["HumSent"] == 100.0 and result.metrics["HumSent_total"] == 1
    assert result.metrics["AutSent"] == 100.0 and result.metrics["AutSent_total"] == 2
    assert "humsent" not in result.per_example[1] and "autsent" not in result.per_example[2]


def test_picking_an_unknown_sentence_is_an_error() -> None:
    q = Question(id="q", answers=("Kate",), story="s")
    with pytest.raises(InputFormatError, match="sentence '9' is not in story 's'") as exc:
        evaluate_deepread(data(q), {"q": Prediction(sentence="9")}, source="pred.json")
    assert str(exc.value).startswith("pred.json, id 'q': ")
    with pytest.raises(InputFormatError, match="no story"):
        evaluate_deepread(data(Question(id="q", answers=("Kate",))), {"q": Prediction(sentence="1")})


def test_unknown_predictions_are_ignored_unless_strict() -> None:
    d = data(Question(id="q", answers=("Kate",)))
    predictions = {"q": Prediction(answer="Kate"), "other": Prediction(answer="x")}
    assert evaluate_deepread(d, predictions).metrics["recall"] == 100.0
    with pytest.raises(InputFormatError, match="not in the data"):
        evaluate_deepread(d, predictions, strict=True)
    with pytest.raises(ValueError):
        evaluate_deepread(d, predictions, autsent_threshold=0.0)


# --- files and command line ---


def test_fixture_files_load() -> None:
    d = load_deepread_data(DATA / "deepread_data.json")
    assert [q.id for q in d.questions] == ["rm-01-1", "rm-01-2", "rm-01-3", "rm-01-4"]
    assert d.questions[1].answers == ("three dogs", "3 dogs")
    assert d.questions[0].answer_sentences == frozenset({"1"})
    assert list(d.stories["rm-01"].sentences) == ["1", "2", "3", "4"]
    p = load_deepread_predictions(DATA / "deepread_pred.json")
    assert p["rm-01-2"] == Prediction(sentence="3")
    assert p["rm-01-3"] == Prediction(answer="The mailman was barked at", sentence="3")


def test_cli_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_path = tmp_path / "per_example.json"
    code, out, err = run_cli(["deepread", str(DATA / "deepread_data.json"), str(DATA / "deepread_pred.json"),
                              "--per-example", str(out_path)], capsys)
    assert code == 0
    assert out == {
        "precision": pytest.approx((1 / 7 + 1 / 5 + 1 / 2 + 0) / 4 * 100, rel=1e-12),
        "recall": 62.5,
        "HumSent": 50.0,
        "AutSent": 50.0,
        "total": 4,
        "scored": 4,
    }
    assert "1 question(s) have no prediction" in err
    records = json.loads(out_path.read_text())
    assert [r["id"] for r in records] == ["rm-01-1", "rm-01-2", "rm-01-3", "rm-01-4"]
    assert records[1] == {"id": "rm-01-2", "precision": 20.0, "recall": 50.0, "key": 0, "humsent": 0.0,
                          "autsent": 0.0, "story": "rm-01", "sentence": "3", "missing": False}
    code, out, _ = run_cli(["deepread", str(DATA / "deepread_data.json"), str(DATA / "deepread_pred.json"),
                            "--autsent-threshold", "0.5"], capsys)
    assert out["AutSent"] == 75.0


def write(tmp_path: Path, name: str, obj: Any) -> str:
    path = tmp_path / name
    path.write_bytes(obj if isinstance(obj, bytes) else json.dumps(obj).encode())
    return str(path)


GOOD_DATA = {"stories": [{"id": "s", "sentences": [{"id": "1", "text": "Kate ran."}]}],
             "questions": [{"id": "q", "story": "s", "answers": ["Kate"]}]}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"{\"questions\": [", "invalid JSON"),
        (b"\xff", "not valid UTF-8"),
        ([], "expected a JSON object with 'questions'"),
        ({}, "missing field 'questions'"),
        ({"questions": []}, "no questions"),
        ({"questions": [{"answers": ["x"]}]}, "missing field 'id' in question 1"),
        ({"questions": [{"id": "q"}]}, "id 'q': missing field 'answers'"),
        ({"questions": [{"id": "q", "answers": []}]}, "non-empty list of strings"),
        ({"questions": [{"id": "q", "answers": [3]}]}, "non-empty list of strings"),
        ({"questions": [{"id": "q", "answers": ["x"]}, {"id": "q", "answers": ["y"]}]}, "more than once"),
        ({"questions": [{"id": "q", "answers": ["x"], "story": "nope"}]}, "story 'nope' is not in 'stories'"),
        ({"stories": {}, "questions": [{"id": "q", "answers": ["x"]}]}, "'stories' should be a list"),
        ({"stories": [{"id": "s", "sentences": [{"id": 1}]}], "questions": []}, "missing field 'text'"),
        ({"stories": [{"id": "s", "sentences": [{"id": 1.5, "text": "x"}]}], "questions": []},
         "string or an integer sentence id"),
        ({"stories": [{"id": "s", "sentences": [{"id": 1, "text": "x"}, {"id": "1", "text": "y"}]}],
          "questions": []}, "sentence id '1' appears twice"),
        ({"stories": [{"id": "s", "sentences": [{"id": 1, "text": "x"}]}],
          "questions": [{"id": "q", "answers": ["x"], "story": "s", "answer_sentences": [2]}]},
         "answer sentence '2' is not a sentence of story 's'"),
    ],
)
def test_cli_bad_data(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: Any, expected: str) -> None:
    data_path = write(tmp_path, "data.json", content)
    pred_path = write(tmp_path, "pred.json", {"q": "Kate"})
    code, out, err = run_cli(["deepread", data_path, pred_path], capsys)
    assert code == 1 and out == "" and err.count("\n") == 1
    assert data_path in err and expected in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"[\"Kate\"]", "expected a JSON object mapping question ids"),
        ({"q": 3}, "prediction should be an answer string or an object"),
        ({"q": {"text": "Kate"}}, "prediction should be an answer string or an object"),
        ({"q": {"answer": 3}}, "field 'answer' should be a string"),
        ({"q": {"sentence": [1]}}, "field 'sentence' should be a string or an integer sentence id"),
        ({"q": {"sentence": "7"}}, "sentence '7' is not in story 's'"),
    ],
)
def test_cli_bad_predictions(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: Any, expected: str) -> None:
    data_path = write(tmp_path, "data.json", GOOD_DATA)
    pred_path = write(tmp_path, "pred.json", content)
    code, out, err = run_cli(["deepread", data_path, pred_path], capsys)
    assert code == 1 and out == "" and err.count("\n") == 1
    assert pred_path in err and expected in err


def test_cli_duplicate_prediction_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data_path = write(tmp_path, "data.json", GOOD_DATA)
    pred_path = write(tmp_path, "pred.json", b'{"q": "nobody", "q": "Kate"}')
    code, out, err = run_cli(["deepread", data_path, pred_path], capsys)
    assert code == 0 and out["recall"] == 100.0 and "appears more than once" in err
    code, _, err = run_cli(["deepread", data_path, pred_path, "--strict"], capsys)
    assert code == 1 and "id 'q'" in err


def test_cli_bad_threshold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data_path = write(tmp_path, "data.json", GOOD_DATA)
    pred_path = write(tmp_path, "pred.json", {"q": "Kate"})
    code, _, err = run_cli(["deepread", data_path, pred_path, "--autsent-threshold", "2"], capsys)
    assert code == 1 and "--autsent-threshold" in err

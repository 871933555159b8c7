import asyncio
import os.path

from textkit.concordance import banner, first_context, kwic, positions
from textkit.corpus import Corpus, list_documents, totals_of, word_totals


def make_corpus(tmp_path):
    (tmp_path / "a.txt").write_text("the cat sat on the mat", encoding="utf-8")
    (tmp_path / "b.txt").write_text("a dog and a cat", encoding="utf-8")
    (tmp_path / "notes.md").write_text("not a document")
    (tmp_path / "sub.txt").mkdir()
    corpus = Corpus(str(tmp_path))
    assert corpus.load() == 2
    return corpus


def test_list_documents(tmp_path):
    make_corpus(tmp_path)
    names = [os.path.basename(p) for p in list_documents(str(tmp_path))]
    assert names == ["a.txt", "b.txt"]
    assert list_documents(str(tmp_path), ".md") == [os.path.join(str(tmp_path), "notes.md")]


def test_corpus_queries(tmp_path):
    corpus = make_corpus(tmp_path)
    assert corpus.document("a.txt").startswith("the cat")
    assert corpus.document("c.txt") is None
    assert corpus.frequencies()["cat"] == 2
    assert corpus.containing("cat") == ["a.txt", "b.txt"]
    assert corpus.containing("dog") == ["b.txt"]
    assert corpus.longest() == "a.txt"
    assert Corpus(str(tmp_path)).longest() is None
    assert corpus.all_nonempty()


def test_async_totals(tmp_path):
    corpus = make_corpus(tmp_path)
    assert asyncio.run(word_totals(corpus.texts, batch=1)) == {"a.txt": 6, "b.txt": 5}
    assert asyncio.run(totals_of([corpus, corpus])) == [{"a.txt": 6, "b.txt": 5}] * 2


def test_concordance():
    text = "The cat sat. Then the cat ran off"
    assert kwic(text, "cat") == ["the [cat] sat then", "then the [cat] ran off"]
    assert first_context(text, "ran") == "cat [ran] off"
    assert first_context(text, "dog") is None
    assert positions("a b a")["a"] == [0, 2]
    assert banner("cat") == "== CAT =="

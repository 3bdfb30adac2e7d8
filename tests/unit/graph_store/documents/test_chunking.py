import textwrap

from hopgraph.graph_store.documents.chunking import chunk_document, split_sentences
from hopgraph.graph_store.documents.schema import Document


def words(text: str) -> int:
    return len(text.split())


def test_short_document_stays_whole_with_its_own_id():
    doc = Document("a", "T", "One two three. Four five.")
    [chunk] = chunk_document(doc, 10, words)
    assert (chunk.id, chunk.doc_id, chunk.position, chunk.n_chunks) == ("a", "a", 0, 1)
    assert chunk.text == doc.text
    assert chunk.embed_text == "T\nOne two three. Four five."


def test_long_document_splits_at_sentence_ends_in_balanced_chunks():
    sentences = [f"Sentence {i} has exactly six words." for i in range(10)]  # 60 words
    doc = Document("long", "T", " ".join(sentences))
    chunks = chunk_document(doc, 25, words)
    # ceil(60 / 25) = 3 chunks of ~20 words, not 25 + 25 + 10
    assert [c.id for c in chunks] == ["long#0", "long#1", "long#2"]
    assert all(c.n_chunks == 3 and c.doc_id == "long" for c in chunks)
    assert [c.position for c in chunks] == [0, 1, 2]
    assert all(c.text.endswith(".") for c in chunks)  # no sentence cut
    assert all(words(c.text) <= 25 for c in chunks)
    assert " ".join(c.text for c in chunks) == doc.text


def test_sentence_longer_than_budget_is_cut_at_words():
    doc = Document("w", "", " ".join(f"w{i}" for i in range(50)))
    chunks = chunk_document(doc, 20, words)
    assert all(words(c.text) <= 20 for c in chunks)
    assert " ".join(c.text for c in chunks).split() == doc.text.split()


def test_chunk_ids_are_stable_across_runs():
    doc = Document("x", "T", "A b c d e. " * 30)
    first = chunk_document(doc, 12, words)
    assert first == chunk_document(doc, 12, words)


def test_split_sentences_keeps_closing_quotes():
    assert split_sentences('He said "go." Then left.\nNew line') == [
        'He said "go."',
        "Then left.",
        "New line",
    ]


def test_hard_wrapped_paragraphs_are_joined_and_chunks_end_at_sentence_ends():
    # a paragraph wrapped at 40 columns: its lines end mid-sentence
    prose = " ".join(f"Sentence number {i} says a few more words here." for i in range(12))
    wrapped = textwrap.fill(prose, 40)
    doc = Document("wrap", "T", f"{wrapped}\n\n{wrapped}")
    chunks = chunk_document(doc, 30, words)
    assert len(chunks) > 2
    assert all(c.text.endswith(".") for c in chunks)  # never mid-sentence
    assert all("\n" not in c.text.replace("\n\n", "") for c in chunks)  # wraps are undone
    assert " ".join(c.text for c in chunks).split() == doc.text.split()


def test_code_blocks_and_lists_stay_whole_with_their_newlines():
    code = "```python\ndef f(x):\n    return x + 1\n```"
    items = "- first item\n- second item\n- third item"
    intro = " ".join(f"Intro sentence {i} is here." for i in range(6))
    doc = Document("code", "T", f"# Usage\n\n{intro}\n\n{code}\n\n{intro}\n\n{items}\n\n{intro}")
    chunks = chunk_document(doc, 20, words)
    texts = [c.text for c in chunks]
    assert any(code in t for t in texts)  # the block whole, newlines and indent kept
    assert any(items in t for t in texts)
    assert all(c.section == "Usage" for c in chunks)


def test_headings_open_chunks_and_set_the_section():
    body = " ".join(f"Words of sentence {i} go here." for i in range(5))  # 30 words
    doc = Document("h", "T", f"# Install\n\n{body}\n\n## From source\n\n{body}\n\n# Use\n\n{body}")
    chunks = chunk_document(doc, 40, words)
    assert [c.section for c in chunks] == ["Install", "Install > From source", "Use"]
    assert [c.text.split("\n")[0] for c in chunks] == ["# Install", "## From source", "# Use"]


def test_a_block_over_the_budget_is_cut_at_lines():
    code = "\n".join(f"    line_{i} = {i}  # a comment" for i in range(30))
    chunks = chunk_document(Document("big", "", code), 40, words)
    assert len(chunks) > 1
    assert "\n".join(c.text for c in chunks) == code

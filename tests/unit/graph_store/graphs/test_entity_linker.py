"""The one entity linker: questions are linked to entities as the chunks were."""

from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.graph_store.graphs.entity_linker import EntityLinker
from hopgraph.graph_store.graphs.extraction.offline import read_chunk


def chunk(i: int, title: str, text: str) -> Chunk:
    return Chunk(f"d{i}#0", f"d{i}", title, text)


CORPUS = [
    chunk(1, "Larry Alcala", "Larry Alcala studied at the University of the Philippines."),
    chunk(2, "University of the Philippines", "The University of the Philippines is in Manila."),
    chunk(3, "Love (band)", "Love was a rock band. People love music."),
    chunk(4, "Manila", "Manila is the capital."),
]


def test_a_question_links_to_the_entities_its_chunks_link_to():
    linker = EntityLinker.of_chunks(CORPUS)
    linked = linker.link("When did Larry Alcala study at the University of the Philippines?")
    assert linked.entities == ["larry alcala", "university of the philippines"]
    # the chunk that names them links to the same keys
    reading = read_chunk(CORPUS[0], linker.titles)
    assert set(linked.entities) <= set(reading.entities)


def test_years_are_not_entities_and_each_entity_comes_once_in_order():
    linked = EntityLinker.of_chunks(CORPUS).link("Manila in 1936, Larry Alcala and Manila again")
    assert linked.entities == ["manila", "larry alcala"]
    assert "1936" in linked.words


def test_a_one_word_alias_the_corpus_writes_in_lower_case_links_nowhere():
    linked = EntityLinker.of_chunks(CORPUS).link("Where do people love Manila?")
    assert linked.entities == ["manila"]
    assert "love" in linked.content_words() and "where" not in linked.content_words()


def test_an_index_holds_one_linker_shared_by_the_methods(docs_index):
    from hopgraph.tools import make_retriever

    assert docs_index.entity_linker is docs_index.entity_linker
    iier = make_retriever("iier", docs_index)
    question = "Where is the county seat of Mountrail County?"
    keys = docs_index.entity_linker.link(question).entities
    assert keys and iier.question_keywords(question) == set(keys)


def test_the_saved_title_index_links_as_the_chunks_do(tmp_path, monkeypatch):
    from hopgraph.graph_store.graphs.extraction import title_table
    from hopgraph.graph_store.graphs.extraction.offline import corpus_titles

    titles = corpus_titles(CORPUS)
    title_table.save_titles(tmp_path, titles)
    saved = title_table.load_titles(tmp_path)
    assert saved is not None and dict(saved.aliases) == dict(titles.aliases)
    assert set(saved.common_words) == set(titles.common_words) and saved.longest == titles.longest
    texts = [
        "When did Larry Alcala study at the University of the Philippines?",
        "Where do people love Manila?",
        "Love (band) in Manila, 1936",
        "nothing here",
    ]
    for text in texts:
        assert EntityLinker(saved).link(text) == EntityLinker(titles).link(text), text
    # every key's hash the same: found by comparing the keys' bytes, never a wrong entity
    monkeypatch.setattr(title_table, "key_hash", lambda key: 7)
    title_table.save_titles(tmp_path, titles)
    collided = title_table.load_titles(tmp_path)
    assert collided is not None and dict(collided.aliases) == dict(titles.aliases)
    assert "love" in collided.common_words and "missing" not in collided.aliases


def test_an_index_links_questions_against_its_graph_builds_title_index(docs_index):
    from hopgraph.graph_store.graphs.extraction.title_table import StringTable

    saved = docs_index.entity_linker
    assert isinstance(saved.titles.aliases, StringTable)  # memory-mapped, not rebuilt
    made = EntityLinker.of_chunks(docs_index.chunks.values())
    assert len(saved.titles.aliases) == len(made.titles.aliases) > 0
    for chunk in docs_index.chunks.values():
        assert saved.link(chunk.text) == made.link(chunk.text)


def test_a_batch_reads_against_the_keys_it_looks_up_as_against_the_whole_index(
    tmp_path, docs_index, monkeypatch
):
    from hopgraph.graph_store.graphs.extraction import title_table
    from hopgraph.graph_store.graphs.extraction.offline import corpus_titles

    chunks = [*CORPUS, *docs_index.chunks.values()]
    titles = corpus_titles(chunks)
    title_table.save_titles(tmp_path, titles)
    saved = title_table.SavedTitles(tmp_path)
    batch = saved.batch()
    assert read_chunk(CORPUS[0], batch) == read_chunk(CORPUS[0], titles)
    held = [key for key, value in batch.aliases.asked.items() if value is not None]
    assert 0 < len(held) < len(titles.aliases)  # only what it looked up, kept
    for each in chunks:
        assert read_chunk(each, saved.batch()) == read_chunk(each, titles), each.id
    # every key's hash the same: the keys' bytes tell them apart
    monkeypatch.setattr(title_table, "key_hash", lambda key: 7)
    title_table.save_titles(tmp_path, titles)
    collided = title_table.SavedTitles(tmp_path)
    for each in CORPUS:
        assert read_chunk(each, collided.batch()) == read_chunk(each, titles), each.id


def test_a_filter_made_by_blocks_of_entries_is_the_filter_made_at_once(tmp_path, monkeypatch):
    from hopgraph.graph_store.graphs.extraction import title_table
    from hopgraph.graph_store.graphs.extraction.offline import corpus_titles

    title_table.save_titles(tmp_path, corpus_titles(CORPUS))
    whole = title_table.SavedTitles(tmp_path)
    monkeypatch.setattr(title_table, "FILTER_BLOCK", 3)
    blocks = title_table.SavedTitles(tmp_path)
    for one, other in zip(whole.looked_up, blocks.looked_up, strict=True):
        assert one.table.count > 3  # several blocks
        assert one.bits == other.bits and any(one.bits)

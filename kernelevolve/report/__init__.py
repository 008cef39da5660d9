"""What a person looks at after (or during) a search: the run report, the bench report and the live view.

`data.py` and `bench.py` turn the store and a bench folder into plain JSON-able data, `node.py` one node's record
(shared with `show --node`), `layout.py` places the search graph, `html.py` renders it through the templates, and
`serve.py` is the live, read-only web view.
"""

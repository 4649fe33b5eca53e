"""The editor-facing JSON of loopd's own `loopd/*` extension, as typed models: the one
source its TypeScript types and its JSON Schema are generated from.

- `updates.py`: `Wire`, the content blocks and `session/update` (pydantic, camelCase
  on the wire), built from the vocabulary's own Literals;
- `shapes.py`: the methods' params and results;
- `methods.py`: the methods, each with its params and result, and who sends it;
- `export.py`: renders `vscode-extension/src/generated/wire.ts` and
  `editors/loopd-extension.schema.json` (`python -m loopd.protocol.wire.export`);
  `tests/unit/protocol/test_wire_export.py` fails when either has drifted.

The builders (`protocol.events_wire.to_wire`, `lsp.wire`, `mention_to_wire`, ...) still
return plain dicts, the cheap thing on the hot path; each is pinned by a golden test
that checks its output against these models. ACP's own types come from the ACP SDK
and LSP's from lsprotocol: nothing here restates them beyond what the extension
carries under its own prefix.

To add a type: write the model (a subclass of `Wire`) in `shapes.py`, or in
`updates.py` for what rides in `session/update`; a public model or Literal/union
alias there is exported by itself, under its Python name. If it is a method's params
or result, add the method to `methods.METHODS`. Then run the export and commit the
two files it writes.
"""

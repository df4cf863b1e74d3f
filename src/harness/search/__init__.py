"""Tool search: how names and queries are read (``words``, ``queries``), how a tool becomes an
indexed document (``documents``), the ranking over the ``tool_index`` projection's tables
(``ranking``) and reading its rows back (``hits``)."""

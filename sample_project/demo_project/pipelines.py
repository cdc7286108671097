"""The demo's item pipeline: what a project does with ``rep9309_content_usage``.

docs/usage-preferences.md shows this class; ``tests/test_demo.py`` checks that the
documented copy is this one and that the demo crawl drops what it should.
"""

from __future__ import annotations

from typing import Any

from itemadapter import ItemAdapter
from scrapy.exceptions import DropItem


class DropRefusedTraining:
    """Drop items of pages whose usage preferences refuse AI training (train-ai=n)."""

    def process_item(self, item: Any, spider: Any = None) -> Any:
        adapter = ItemAdapter(item)
        usage = adapter.get("content_usage") or {}
        if usage.get("train-ai") == "n":
            raise DropItem(f"train-ai=n: {adapter.get('url')}", log_level="INFO")
        return item

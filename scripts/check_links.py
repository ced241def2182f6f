#!/usr/bin/env python3
"""Fails on a broken internal link or anchor in a rendered mdBook (scripts/docs.sh runs it).

Every `href` of every page that is not external (http:, https:, mailto:) must name a file of
the book, and its `#fragment` an `id` in that file. Only the standard library; no network.

    python3 scripts/check_links.py target/book
"""

import os
import sys
from html.parser import HTMLParser
from urllib.parse import unquote, urldefrag, urlparse


class Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids = set()
        self.hrefs = []  # (line, href)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        if tag == "a" and a.get("href") is not None:
            self.hrefs.append((self.getpos()[0], a["href"]))


def main(book):
    pages = {}
    for d, _, files in os.walk(book):
        for f in files:
            if f.endswith(".html"):
                p = os.path.join(d, f)
                parser = Page()
                with open(p, encoding="utf-8") as fh:
                    parser.feed(fh.read())
                pages[os.path.normpath(p)] = parser
    if not pages:
        print(f"check_links: no HTML pages under {book}", file=sys.stderr)
        return 1
    broken = []
    for path, page in sorted(pages.items()):
        # mdBook's print page and 404 page repeat every link with other bases.
        if os.path.basename(path) in ("print.html", "404.html"):
            continue
        for line, href in page.hrefs:
            url = urlparse(href)
            if url.scheme or href.startswith("//"):
                continue
            target, frag = urldefrag(href)
            if target:
                t = os.path.normpath(os.path.join(os.path.dirname(path), unquote(target)))
                if os.path.isdir(t):
                    t = os.path.join(t, "index.html")
            else:
                t = path
            rel = os.path.relpath(path, book)
            if not os.path.exists(t):
                broken.append(f"{rel}:{line}: {href}: {os.path.relpath(t, book)} does not exist")
                continue
            if frag and t.endswith(".html"):
                ids = pages[t].ids if t in pages else set()
                if unquote(frag) not in ids:
                    broken.append(f"{rel}:{line}: {href}: no id \"{frag}\" in {os.path.relpath(t, book)}")
    for b in broken:
        print(b, file=sys.stderr)
    if broken:
        print(f"check_links: {len(broken)} broken link(s) in {book}", file=sys.stderr)
        return 1
    print(f"check_links: {sum(len(p.hrefs) for p in pages.values())} links in {len(pages)} pages resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "target/book"))

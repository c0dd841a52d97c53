"""Code in a report page: a monospaced box with a "copy" button, styled inline.

Example:
    >>> from tts_kit.report.code_html import code_block
    >>> "<code>x = 1</code>" in code_block("x = 1")
    True
"""

from __future__ import annotations

import html

#: Copies the code block's text; the clipboard API where the page may use it, else a
#: selected textarea (a page opened from a file, an older browser).
_COPY_JS = (
    "var b=this,t=b.parentNode.querySelector('pre').innerText;"
    "function ok(){b.textContent='copied';setTimeout(function(){b.textContent='copy'},1500)}"
    "function old(){var a=document.createElement('textarea');a.value=t;"
    "document.body.appendChild(a);a.select();document.execCommand('copy');a.remove();ok()}"
    "if(navigator.clipboard&&window.isSecureContext){navigator.clipboard.writeText(t)"
    ".then(ok,old)}else{old()}"
)
_CODE_STYLE = (
    "font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,'DejaVu Sans Mono',"
    "'Liberation Mono',monospace;font-size:12.5px;line-height:1.45;background:#f6f8fa;"
    "color:#1f2328;border:1px solid #d0d7de;border-radius:6px;padding:10px 72px 10px 12px;"
    "margin:0;overflow-x:auto;white-space:pre;text-align:left"
)
_BUTTON_STYLE = (
    "position:absolute;top:6px;right:6px;font:12px sans-serif;padding:2px 10px;"
    "border:1px solid #d0d7de;border-radius:4px;background:#fff;color:#1f2328;cursor:pointer"
)


def code_block(text: str, kind: str = "snippet") -> str:
    """``text`` (escaped) in a code box of class ``tts-kit-{kind}`` with a "copy" button,
    styled inline so report.html and JupyterLab show the same box.

    Example:
        >>> block = code_block("tts-kit serve --preset <x>", "serve")
        >>> '<pre class="tts-kit-serve"' in block, "&lt;x&gt;" in block, ">copy</button>" in block
        (True, True, True)
    """
    return (f'<div class="tts-kit-code" style="position:relative;margin:0.3em 0 1em">'
            f'<button type="button" class="tts-kit-copy" title="copy to the clipboard" '
            f'style="{_BUTTON_STYLE}" onclick="{_COPY_JS}">copy</button>'
            f'<pre class="tts-kit-{html.escape(kind)}" style="{_CODE_STYLE}"><code>'
            f"{html.escape(text.rstrip())}</code></pre></div>")

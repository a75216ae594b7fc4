"""Trunk's post-build hook (Trunk.toml): gives the built page a Content-Security-Policy that
allows what it needs and nothing else. Trunk writes the module script that starts the
WebAssembly inline, with hashed file names that change each build, so the policy allows that
script by its SHA-256, computed here, rather than allowing inline scripts at all."""
import base64, hashlib, os, re, sys

POLICY = [
    "default-src 'none'",
    # Our own scripts, the inline starter by hash, and compiling our WebAssembly.
    "script-src 'self' 'wasm-unsafe-eval' {hashes}",
    # The training worker's start script (web/worker.js), from the page's own origin.
    "worker-src 'self'",
    # Style attributes are set at run time (not by our Rust: seen as style-src-attr violations
    # in the e2e test); inline styles cannot run code, so they are allowed, scripts are not.
    "style-src 'self' 'unsafe-inline'",
    # The favicon is a data: URL; charts are drawn on canvases.
    "img-src 'self' data:",
    # The .wasm file and the built-in data, fetched from the page's own origin.
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "object-src 'none'",
]

def main():
    page = os.path.join(os.environ.get("TRUNK_STAGING_DIR", sys.argv[1] if len(sys.argv) > 1 else "dist"), "index.html")
    html = open(page, encoding="utf-8").read()
    if "Content-Security-Policy" in html:
        return
    inline = re.findall(r"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", html, re.S)
    hashes = " ".join(
        "'sha256-%s'" % base64.b64encode(hashlib.sha256(s.encode("utf-8")).digest()).decode()
        for s in inline
    )
    policy = "; ".join(POLICY).format(hashes=hashes)
    meta = '<meta http-equiv="Content-Security-Policy" content="%s" />' % policy
    html = html.replace('<meta charset="utf-8" />', '<meta charset="utf-8" />\n    ' + meta, 1)
    open(page, "w", encoding="utf-8").write(html)

main()

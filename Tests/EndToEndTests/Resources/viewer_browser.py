#!/usr/bin/env python3
"""Drives Tapwire's web viewer in headless Chromium (selenium) for ViewerEndToEndTests.

  viewer_browser.py generate DIR COUNT      writes a log of COUNT http records (a .gz and a plain
                                            rotated file, then the active one; a loss, a tunnel, a
                                            websocket record and one of its messages among them)
  viewer_browser.py live URL PROXY ORIGIN OUT   the page against `tapwire run` while curl sends traffic
  viewer_browser.py history URL COUNT OUT [DIR]  the page over a large generated history (in DIR:
                                            records appended there show live)
  viewer_browser.py reconnect BIN DIR OUT    the page while `BIN view --log-dir DIR` stops and
                                            starts again on its port

Prints one line per check; exits 1 at the first failed check (its reason on stderr).
Screenshots go to OUT."""
import gzip, json, os, subprocess, sys, time, urllib.parse, urllib.request

def fail(message):
    print("FAIL: " + message, file=sys.stderr, flush=True)
    sys.exit(1)

def check(condition, message):
    if not condition:
        fail(message)
    print("ok: " + message, flush=True)

# ---------------------------------------------------------------- generate

def record(i, millis):
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(millis / 1000)) + ".%06dZ" % ((millis % 1000) * 1000)
    status = 200 if i % 10 else 503
    duration = 0.001 + (i % 97) / 1000.0 + (1.2 if i % 1000 == 0 else 0)
    return json.dumps({
        "id": "%016x-%06x" % (millis, i + 1), "kind": "http", "client": "127.0.0.1:50000",
        "request": {"method": "GET" if i % 3 else "POST", "url": "http://api.local/v1/items/%d?page=%d" % (i, i % 7),
                    "httpVersion": "HTTP/1.1", "headers": [["Host", "api.local"], ["Authorization", "[redacted]"]], "bodySize": 0},
        "response": {"status": status, "reason": "OK" if status == 200 else "Service Unavailable", "httpVersion": "HTTP/1.1",
                     "headers": [["Content-Type", "application/json"]], "bodySize": 40, "mimeType": "application/json", "charset": None},
        "data": {"size": 40, "captured": 40, "truncated": False, "contentEncoding": None},
        "rule": "default", "serializer": "json", "result": {"success": {"n": i, "big": 9007199254740993}}, "error": None,
        "timeline": {"requestStartTime": stamp, "latency": duration / 2, "requestDuration": duration,
                     "serializationDuration": 0.00002, "totalDuration": duration + 0.00002},
        "metrics": {"dns": None, "connect": 0.0001, "tls": None, "send": 0.00001, "wait": duration / 2,
                    "receive": duration / 2 - 0.00011, "connectionReused": False, "upstream": "127.0.0.1:80"},
    }, separators=(",", ":"))

def generate(directory, count):
    os.makedirs(directory, exist_ok=True)
    start = int(time.time() * 1000) - count * 10 - 60_000
    lines = [record(i, start + i * 10) for i in range(count)]
    third = count * 3 // 10
    with gzip.open(os.path.join(directory, "tapwire-20261201T000000.jsonl.gz"), "wt") as f:
        f.write("\n".join(lines[:third]) + "\n")
    with open(os.path.join(directory, "tapwire-20261202T000000.jsonl"), "w") as f:
        f.write("\n".join(lines[third:2 * third]) + "\n")
    active = lines[2 * third:]
    middle = len(active) // 2
    base = start + count * 10
    extra = [
        json.dumps({"kind": "loss", "lost": 7, "time": "2026-12-02T10:11:15.000000Z", "reason": "queue full"}),
        json.dumps({"id": "%016x-%06x" % (base, count + 1), "kind": "tunnel", "client": "127.0.0.1:50001", "target": "secure.example:443",
                    "status": 200, "bytesFromClient": 517, "bytesFromUpstream": 4711, "startTime": "2026-12-02T10:11:13.000000Z",
                    "endTime": "2026-12-02T10:11:14.500000Z", "duration": 1.5, "closedBy": "client", "error": None}),
        json.dumps({"id": "%016x-%06x" % (base, count + 2), "kind": "websocket", "client": "127.0.0.1:50002", "target": "chat.local:80",
                    "status": 101, "request": {"method": "GET", "url": "http://chat.local/socket", "httpVersion": "HTTP/1.1",
                                                "headers": [["Upgrade", "websocket"]], "bodySize": 0},
                    "response": {"status": 101, "reason": "Switching Protocols", "httpVersion": "HTTP/1.1",
                                 "headers": [["Upgrade", "websocket"]], "bodySize": 0, "mimeType": None, "charset": None},
                    "bytesFromClient": 1229, "bytesFromUpstream": 35328, "startTime": "2026-12-02T10:11:13.500000Z",
                    "endTime": "2026-12-02T10:11:15.500000Z", "duration": 2, "closedBy": "upstream", "error": None}),
        json.dumps({"id": "%016x-%06x" % (base, count + 3), "kind": "wsMessage", "connection": "%016x-%06x" % (base, count + 2),
                    "direction": "server", "opcode": "text", "size": 23, "time": "2026-12-02T10:11:14.000000Z",
                    "result": {"success": {"hello": "world", "n": 12345678901234567890}}}, separators=(",", ":")),
    ]
    with open(os.path.join(directory, "tapwire.jsonl"), "w") as f:
        f.write("\n".join(active[:middle] + extra + active[middle:]) + "\n")

# ---------------------------------------------------------------- browser

def browser(out):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("TAPWIRE_CHROMIUM", "/usr/bin/chromium")
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-proxy-server",
                "--window-size=1500,950", "--no-first-run", "--disable-extensions"):
        options.add_argument(arg)
    service = Service(os.environ.get("TAPWIRE_CHROMEDRIVER", "/usr/bin/chromedriver"))
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_script_timeout(60)
    # Long tasks are recorded from the first script on: the blocking budget covers loading too.
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": """
        window.__longTasks = [];
        new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__longTasks.push(e.duration); })
          .observe({ type: "longtask", buffered: true });
    """})
    os.makedirs(out, exist_ok=True)
    return driver

def wait(driver, script, timeout=20, message="condition"):
    deadline = time.time() + timeout
    while True:
        value = driver.execute_script(script)
        if value:
            return value
        if time.time() > deadline:
            fail("timed out waiting for " + message)
        time.sleep(0.02)

def rows(driver):
    return driver.execute_script("return window.tapwireViewer.rows")

def curl(proxy, url, *extra):
    env = dict(os.environ, http_proxy=proxy, HTTP_PROXY=proxy, https_proxy=proxy, HTTPS_PROXY=proxy, NO_PROXY="", no_proxy="")
    return subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20", *extra, url],
                          env=env, capture_output=True, text=True).stdout

def click_row(driver, id, ctrl=False):
    """Clicks the list row of record `id` once it is rendered (rows render on the next frame)."""
    wait(driver, "return document.querySelector('#rows .row[data-id=\"%s\"]:not([hidden])')" % id, message="the row of " + id)
    driver.execute_script("document.querySelector('#rows .row[data-id=\"' + arguments[0] + '\"]:not([hidden])')"
                          ".dispatchEvent(new MouseEvent('click', { bubbles: true, ctrlKey: arguments[1] }))", id, ctrl)

def set_query(driver, text):
    from selenium.webdriver.common.keys import Keys
    box = driver.find_element("id", "q")
    box.clear()
    box.send_keys(text + Keys.ENTER)

def live(url, proxy, origin, out):
    driver = browser(out)
    try:
        driver.get(url)
        wait(driver, "return window.tapwireViewer && window.tapwireViewer.done && window.tapwireViewer.source && window.tapwireViewer.source.readyState === 1",
             message="the list to load and the live stream to open")
        # Rows appear live as curl sends traffic.
        # Timed to the row drawn (a row element showing a record the page did not have
        # before), not to the record's arrival: the page draws live rows at its own pace.
        delays = []
        for i in range(3):
            seen = json.dumps(driver.execute_script("return window.tapwireViewer.rows.map(r => r.id)"))
            status = curl(proxy, "%s/json?live=%d" % (origin, i))
            ended = time.time()
            check(status == "200", "curl through the proxy answered 200 (%s)" % status)
            wait(driver, "const seen = new Set(%s); return [...document.querySelectorAll('#rows .row')].some(r => !r.hidden && r._record && !seen.has(r._record.id) && r._record.path === '/json' && r.children[3].textContent === '/json')" % seen,
                 timeout=10, message="live row %d drawn" % i)
            delays.append(time.time() - ended)
        print("live delays (s): " + ", ".join("%.3f" % d for d in delays), flush=True)
        check(max(delays) < 1.0, "every live row appears within 1 s of its exchange ending (slowest %.3f s)" % max(delays))
        curl(proxy, origin + "/status?code=404")
        curl(proxy, origin + "/status?code=503")
        wait(driver, "return window.tapwireViewer.rows.filter(r => r.path === '/status').length >= 2", message="status rows")
        driver.save_screenshot(os.path.join(out, "list.png"))

        # The list's cells: the rule, and a small duration bar drawn to a width.
        cells = wait(driver, "const r = [...document.querySelectorAll('#rows .row')].find(r => !r.hidden && r._record && r._record.path === '/json'); "
                             "return r && [r.children[8].textContent, r.querySelector('.dur i').getBoundingClientRect().width, r.querySelector('.dur b').textContent]",
                     message="a /json row's cells")
        check(cells[0] == "default" and cells[1] >= 1 and cells[2].endswith("ms"), "a row shows its rule and a duration bar (%s)" % cells)

        # Failures: a body the JSON serializer refuses, and a transport error (the origin resets
        # mid-body), each in the list's error cell and first in the detail.
        curl(proxy, origin + "/echo", "-H", "Content-Type: application/json", "--data-binary", "{not json")
        curl(proxy, origin + "/reset-mid-body")
        failed = wait(driver, "const r = window.tapwireViewer.rows.find(r => r.path === '/echo' && r.failure); return r && r.id", message="the failed row")
        cell = wait(driver, "const r = document.querySelector('#rows .row[data-id=\"%s\"]:not([hidden])'); return r && r.children[9].textContent" % failed,
                    message="its error cell")
        check(cell != "", "a serializer failure shows in the list's error cell (%r)" % cell)
        click_row(driver, failed)
        banner = wait(driver, "const b = document.querySelector('#detail .banner.failure'); return b && b.textContent", message="the failure banner")
        check("json" in banner.lower(), "the detail leads with the serializer's failure: %r" % banner[:80])
        broken = wait(driver, "const r = window.tapwireViewer.rows.find(r => r.path === '/reset-mid-body' && r.error); return r && [r.id, r.error]",
                      message="the transport error row")
        click_row(driver, broken[0])
        banner = wait(driver, "const b = document.querySelector('#detail .banner.error'); return b && b.textContent", message="the transport error banner")
        check("transport error" in banner and broken[1] in banner, "the detail leads with the transport error: %r" % banner[:80])

        # An event stream's value is a list of its events, each one's data decoded.
        curl(proxy, origin + "/events/anthropic")
        stream = wait(driver, "const r = window.tapwireViewer.rows.find(r => r.path === '/events/anthropic'); return r && r.id", message="the event-stream row")
        click_row(driver, stream)
        text = wait(driver, "const t = document.querySelector('#detail .value .tree'); return t && t.textContent", message="the event-stream tree")
        check("content_block_delta" in text and "text_delta" in text and "message_stop" in text,
              "an event stream is shown as its events, data decoded (%d characters)" % len(text))

        # NDJSON, a property list and a form (by the test's rule) are trees of their values;
        # a validation failure (the test's rule wants JSON) leads the detail.
        plist = ('<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>name</key><string>tap-plist</string>'
                 '<key>count</key><integer>42</integer><key>tags</key><array><string>a</string><string>b</string></array></dict></plist>')
        for kind, content_type, body, expect in (
                ("ndjson", "application/x-ndjson", '{"n":1}\n{"n":2,"big":12345678901234567891}\n', ["12345678901234567891", "big"]),
                ("plist", "application/x-plist", plist, ["tap-plist", "42", "tags"]),
                ("form", "application/x-www-form-urlencoded", "who=ann+lee&tag=a&tag=b", ["who", "ann lee", "tag"])):
            seen = json.dumps(driver.execute_script("return window.tapwireViewer.rows.map(r => r.id)"))
            curl(proxy, origin + "/echo", "-H", "Content-Type: " + content_type, "--data-binary", body)
            found = wait(driver, "const seen = new Set(%s); const r = window.tapwireViewer.rows.find(r => !seen.has(r.id) && r.path === '/echo'); return r && r.id" % seen,
                         message="the %s row" % kind)
            click_row(driver, found)
            # The request body's value and the response's: the echo sends the same bytes back.
            shown = wait(driver, "const t = [...document.querySelectorAll('#detail .value .tree')]; return window.tapwireViewer.current.id === '%s' && t.length && t.map(t => [t.textContent, t.querySelectorAll('details').length])" % found,
                         message="the %s tree" % kind)
            check(any(all(e in text for e in expect) and branches >= 2 for text, branches in shown),
                  "%s is shown as a tree of its values (%r)" % (kind, [text[:60] for text, _ in shown]))
        seen = json.dumps(driver.execute_script("return window.tapwireViewer.rows.map(r => r.id)"))
        curl(proxy, origin + "/close-delimited")
        invalid = wait(driver, "const seen = new Set(%s); const r = window.tapwireViewer.rows.find(r => !seen.has(r.id) && r.path === '/close-delimited'); return r && r.id" % seen,
                       message="the row that fails validation")
        click_row(driver, invalid)
        banner = wait(driver, "const b = document.querySelector('#detail .banner.failure'); return window.tapwireViewer.current.id === '%s' && b && b.textContent" % invalid,
                      message="the validation failure banner")
        check("responseValidationFailed" in banner, "a validation failure leads the detail: %r" % banner[:80])

        # Paused: a new row is announced by the "new" button; following again clears it.
        driver.find_element("id", "follow").click()
        check(driver.find_element("id", "follow").text == "Paused", "the follow button pauses")
        curl(proxy, origin + "/json?paused=1")
        label = wait(driver, "const b = document.getElementById('newer'); return !b.hidden && b.textContent", message="the new-rows button while paused")
        # (This list is shorter than the window, so there is no scrolling to keep rows in place:
        # the history test checks that with a long list.)
        check("1 new" in label and driver.execute_script("return window.tapwireViewer.paused"), "paused, a new row is announced (%r)" % label)
        driver.find_element("id", "follow").click()
        wait(driver, "const v = document.getElementById('viewport'); const s = window.tapwireViewer; return v.scrollTop === 0 && s.rows[0].path === '/json' && document.getElementById('newer').hidden",
             message="following again")
        check(True, "following again shows the new row on top")

        # The query box filters, puts the query in the URL, and shows an error inline.
        set_query(driver, "status=404")
        wait(driver, "const s = window.tapwireViewer; return s.done && s.rows.length === 1 && s.rows[0].status == 404", message="status=404 to filter")
        check("q=status%3D404" in driver.current_url, "the query is in the page URL (%s)" % driver.current_url)
        driver.get(driver.current_url)
        wait(driver, "const s = window.tapwireViewer; return s && s.done && s.rows.length === 1 && document.getElementById('q').value === 'status=404'",
             message="a reload to keep the query")
        check(True, "a reloaded page keeps the query from its URL")
        set_query(driver, "status>=")
        error = wait(driver, "const e = document.getElementById('qerror'); return !e.hidden && e.textContent", message="the query error")
        check("column 9" in error, "a bad expression shows its column inline: %r" % error.strip())
        check(len(rows(driver)) == 1, "the list is not emptied by a bad expression")
        # ... and goes on following the query it had, which stays in the URL.
        curl(proxy, origin + "/status?code=404")
        wait(driver, "return window.tapwireViewer.rows.filter(r => r.status == 404).length === 2", message="a live row after the bad expression")
        check("q=status%3D404" in driver.current_url, "after a bad expression the list follows its last good query (%s)" % driver.current_url)
        set_query(driver, "")
        wait(driver, "const s = window.tapwireViewer; return s.done && s.rows.length >= 5 && document.getElementById('qerror').hidden", message="the full list")

        # A link to a view followed from another site (localhost is another site than
        # 127.0.0.1) shows its query in the box but runs it only on Enter.
        from selenium.webdriver.common.keys import Keys
        here = driver.current_url.split("?")[0]
        driver.get(here.replace("127.0.0.1", "localhost"))
        wait(driver, "return window.tapwireViewer && window.tapwireViewer.done", message="the page under another site's name")
        driver.execute_script("location.href = arguments[0]", here + "?q=" + urllib.parse.quote("status=404"))
        wait(driver, "const s = window.tapwireViewer; return s && s.done && location.hostname === '127.0.0.1' && !document.getElementById('qnote').hidden",
             message="the page linked from another site")
        # An edit and a pause past the typing delay do not run it either; nothing asked the
        # server for it.
        driver.find_element("id", "q").send_keys(" ")
        time.sleep(0.8)
        linked = driver.execute_script("const s = window.tapwireViewer; return [document.getElementById('q').value, s.query, s.rows.length, location.search, "
                                       "performance.getEntriesByType('resource').map(e => e.name).filter(n => n.includes('status%3D404') || n.includes('status=404'))]")
        check(linked[0] == "status=404 " and linked[1] == "" and linked[2] >= 5 and "q=" not in linked[3] and not linked[4],
              "a link from another site shows its query without running it, also after an edit (%s)" % linked)
        driver.save_screenshot(os.path.join(out, "linked.png"))
        driver.find_element("id", "q").send_keys(Keys.ENTER)
        wait(driver, "const s = window.tapwireViewer; return s.done && s.query === 'status=404 ' && s.rows.length === 2 && document.getElementById('qnote').hidden",
             message="Enter to run the linked query")
        check("q=status%3D404" in driver.current_url, "Enter runs it (%s)" % driver.current_url)
        set_query(driver, "")
        wait(driver, "const s = window.tapwireViewer; return s.done && s.rows.length >= 5", message="the full list again")

        # Detail: the decoded tree (number text and key order kept) and the waterfall.
        click_row(driver, driver.execute_script("return window.tapwireViewer.rows.find(r => r.path === '/json' && r.status == 200).id"))
        wait(driver, "return document.querySelector('#detail .tree')", message="the detail tree")
        numbers = driver.execute_script("return [...document.querySelectorAll('#detail .tree .n')].map(e => e.textContent)")
        check("12345678901234567890" in numbers, "a large number is shown as sent (%s)" % numbers[:4])
        keys = driver.execute_script("return [...document.querySelectorAll('#detail .value .tree > details > .leaf > .k, #detail .value .tree > details > details > summary > .k')].map(e => e.textContent)")
        check(keys[:2] == ["id", "ok"], "the value's keys keep their order (%s)" % keys)
        redacted = driver.execute_script("return [...document.querySelectorAll('#detail .redacted')].map(e => e.textContent)")
        check(any("[redacted]" in r for r in redacted), "redacted values are shown as redacted (%s)" % redacted)
        check("hunter2" not in driver.execute_script("return document.getElementById('detail').textContent"),
              "the detail shows nothing redaction removed")
        bars = driver.execute_script("return [...document.querySelectorAll('#detail .waterfall .bar')].map(b => [b.className, b.title, b.getBoundingClientRect().width])")
        check(len(bars) >= 3 and all(b[1] for b in bars), "the waterfall draws a bar per phase with its numbers on hover (%d bars)" % len(bars))
        track = driver.execute_script("return document.querySelector('#detail .waterfall .track').getBoundingClientRect().width")
        spanned = sum(b[2] for b in bars)
        check(0.9 * track <= spanned <= track + 2 * len(bars), "the bars, to scale, span the track together (%.0f of %.0f px)" % (spanned, track))
        driver.save_screenshot(os.path.join(out, "detail.png"))
        driver.find_element("id", "view-pretty").click()
        pretty = driver.execute_script("return [...document.querySelectorAll('#detail .value pre')].map(p => p.textContent).join('\\n')")
        check('"id": 12345678901234567890' in pretty, "the pretty text keeps the number text")
        driver.find_element("id", "view-raw").click()
        raw = driver.execute_script("return [...document.querySelectorAll('#detail .value pre.raw-value')].map(p => p.textContent).join('\\n')")
        check('{"id":12345678901234567890,"ok":true,"name":"tap","items":[1,2,3],"password":' in raw, "the raw view is the value as logged: %r" % raw[:90])
        driver.find_element("id", "view-tree").click()
        check(driver.execute_script("return !!document.querySelector('#detail .value .tree')"), "and back to the tree")

        # The arrow keys move the selection, and the detail with it.
        from selenium.webdriver.common.keys import Keys
        first = driver.execute_script("return window.tapwireViewer.current.id")
        index = driver.execute_script("return window.tapwireViewer.rows.findIndex(r => r.id === arguments[0])", first)
        driver.find_element("id", "viewport").send_keys(Keys.ARROW_DOWN)
        moved = wait(driver, "const s = window.tapwireViewer; return s.current && s.current.id !== '%s' && s.current.id" % first,
                     message="ArrowDown to move the selection")
        expected = driver.execute_script("return window.tapwireViewer.rows[arguments[0] + 1].id", index)
        check(moved == expected, "ArrowDown selects the next row (%s)" % moved)
        driver.find_element("id", "viewport").send_keys(Keys.ARROW_UP)
        wait(driver, "const s = window.tapwireViewer; return s.current.id === '%s' && document.querySelector('#detail .tree')" % first,
             message="ArrowUp back")

        # Copy as curl: the text sends the same request again.
        before = len([r for r in rows(driver) if r.get("path") == "/json"])
        original = driver.execute_script("return window.tapwireViewer.current.id")
        driver.find_element("id", "copy-curl").click()
        text = wait(driver, "const e = document.getElementById('curl-text'); return e && e.textContent", message="the curl text")
        env = dict(os.environ, http_proxy=proxy, HTTP_PROXY=proxy, NO_PROXY="", no_proxy="")
        result = subprocess.run(["sh", "-c", text], env=env, capture_output=True, text=True, timeout=30)
        check(result.returncode == 0 and "12345678901234567890" in result.stdout, "the copied curl command runs and gets the same answer")
        wait(driver, "return window.tapwireViewer.rows.filter(r => r.path === '/json').length === %d" % (before + 1), message="the curl row")
        check(True, "the copied curl command's request is recorded like the original")
        # A POST with a body and a header of its own: what the origin saw from the copied
        # command is what it saw from the original (method, target, body, those headers).
        seen = json.dumps(driver.execute_script("return window.tapwireViewer.rows.map(r => r.id)"))
        first = subprocess.run(["curl", "-s", "--max-time", "20", "-X", "POST", "-H", "X-Probe: copy-7",
                                "-H", "Content-Type: application/x-www-form-urlencoded", "--data-binary", "a=1&b=two words",
                                origin + "/inspect?copy=1"], env=env, capture_output=True, text=True, timeout=30).stdout
        posted = wait(driver, "const seen = new Set(%s); const r = window.tapwireViewer.rows.find(r => !seen.has(r.id) && r.path === '/inspect'); return r && r.id" % seen,
                      message="the POST's row")
        click_row(driver, posted)
        wait(driver, "return window.tapwireViewer.current && window.tapwireViewer.current.id === '%s' && document.getElementById('copy-curl')" % posted, message="the POST's detail")
        driver.find_element("id", "copy-curl").click()
        text = wait(driver, "const e = document.getElementById('curl-text'); return e && e.textContent.includes('/inspect') && e.textContent", message="the POST's curl text")
        again = subprocess.run(["sh", "-c", text], env=env, capture_output=True, text=True, timeout=30).stdout
        def seen_by_origin(answer):
            try:
                d = json.loads(answer)
            except ValueError:
                return answer
            probe = [v for k, v in d["headers"] if k.lower() in ("x-probe", "content-type")]
            return [d["method"], d["target"], d["body"], probe]
        check(seen_by_origin(first)[0] == "POST" and seen_by_origin(again) == seen_by_origin(first),
              "the copied command re-sends the same POST (%s, then %s)" % (seen_by_origin(first), seen_by_origin(again)))

        # Replay: a new record linked to its original.
        click_row(driver, original)
        wait(driver, "return document.getElementById('replay')", message="the replay button")
        driver.find_element("id", "replay").click()
        note = wait(driver, "const e = document.getElementById('replay-result'); return e && e.textContent", message="the replay result")
        check("200" in note, "replay answered: %s" % note)
        replayed = wait(driver, "const r = window.tapwireViewer.rows.find(r => r.replayOf === '%s'); return r && r.id" % original, message="the replay's row")
        wait(driver, "const r = document.querySelector('#rows .row[data-id=\"%s\"]'); return r && r.textContent.includes('↻')" % replayed, message="the replay mark")
        click_row(driver, replayed)
        link = wait(driver, "const a = document.querySelector('#detail .replay-of'); return a && a.textContent", message="the link to the original")
        check(original in link, "the replay's detail links to its original (%s)" % link)

        # Two selected: the structural diff.
        target = driver.execute_script("return window.tapwireViewer.rows.find(r => r.path === '/status' && r.status == 404).id")
        click_row(driver, original)
        click_row(driver, target, ctrl=True)
        wait(driver, "return !document.getElementById('diff').disabled", message="diff to be enabled")
        driver.find_element("id", "diff").click()
        lines = wait(driver, "const e = document.getElementById('diff-lines'); return e && e.textContent", message="the diff")
        check("status: 200 → 404" in lines, "the diff of two selected exchanges is shown")
        driver.save_screenshot(os.path.join(out, "diff.png"))

        # HAR export of the current query.
        set_query(driver, "path=/json")
        wait(driver, "const s = window.tapwireViewer; return s.done && s.rows.length >= 1 && s.rows.every(r => r.path === '/json')", message="path=/json")
        expected = len(rows(driver))
        href = driver.execute_script("return document.getElementById('har').href")
        har = driver.execute_async_script("const done = arguments[1]; fetch(arguments[0]).then(r => r.text()).then(done)", href)
        document = json.loads(har)
        schema_path = os.environ.get("TAPWIRE_HAR_SCHEMA")
        if schema_path:
            import jsonschema
            schema = json.load(open(schema_path))
            errors = list(jsonschema.Draft7Validator(schema).iter_errors(document))
            check(not errors, "the HAR export validates against the HAR 1.2 schema (%s)" % [e.message for e in errors[:3]])
        check(document["log"]["version"] == "1.2" and len(document["log"]["entries"]) == expected,
              "the HAR export holds the query's %d exchanges" % expected)

        # Redaction: a secret request header and a secret body member reach no part of the
        # viewer (it reads the records, which never held them); the header's cell is marked.
        seen = driver.execute_script("return window.tapwireViewer.rows.map(r => r.id)")
        check(curl(proxy, origin + "/json?auth=1", "-H", "Authorization: Bearer AUTH-SECRET-9") == "200", "the request with a secret header")
        secret = wait(driver, "const seen = new Set(%s); const r = window.tapwireViewer.rows.find(r => !seen.has(r.id)); return r && r.id" % json.dumps(seen),
                      message="the row of the request with a secret header")
        click_row(driver, secret)
        wait(driver, "return document.querySelector('#detail .tree') && document.querySelector('#detail table.heads')", message="its detail")
        marked = driver.execute_script("return [...document.querySelectorAll('#detail table.heads tr')].filter(tr => tr.children[0].textContent.toLowerCase() === 'authorization').map(tr => [tr.children[1].className, tr.children[1].textContent])")
        check(marked == [["redacted", "[redacted]"]], "the Authorization cell is shown as redacted (%s)" % marked)
        fetch = "const done = arguments[1]; fetch(arguments[0]).then(r => r.text()).then(done)"
        answers = {
            "the detail": driver.execute_script("return document.getElementById('detail').textContent"),
            "/api/record": driver.execute_async_script(fetch, "/api/record?id=" + secret),
            "/api/curl": driver.execute_async_script(fetch, "/api/curl?id=" + secret),
            "/api/har": driver.execute_async_script(fetch, "/api/har?q=" + urllib.parse.quote("path=/json")),
        }
        leaks = [name for name, text in answers.items() if "AUTH-SECRET-9" in text or "hunter2" in text]
        check(answers["/api/record"].startswith("{") and not leaks, "no secret in %s (leaked in %s)" % (", ".join(answers), leaks))
        print("PASS", flush=True)
    finally:
        driver.quit()

def history(url, count, out, directory=None):
    driver = browser(out)
    try:
        started = time.time()
        driver.get(url)
        wait(driver, "return window.tapwireViewer && window.tapwireViewer.rows.length > 0 && document.querySelectorAll('#rows .row:not([hidden])').length > 10",
             timeout=30, message="the first rows")
        first_rows = time.time() - started
        paint = driver.execute_script("const p = performance.getEntriesByName('first-contentful-paint')[0]; return p ? p.startTime : null")
        print("first rows after %.3f s (first contentful paint %s ms)" % (first_rows, paint), flush=True)
        driver.save_screenshot(os.path.join(out, "history.png"))
        # The list's cells sit under their header cells (placed at the header's offsets, not
        # laid out per row), and none is pushed out of its row.
        misplaced = driver.execute_script("""
            const head = [...document.querySelectorAll('#list .row.head > span')].map(c => c.getBoundingClientRect());
            const out = [];
            for (const r of [...document.querySelectorAll('#rows .row:not([hidden]):not(.loss)')].slice(0, 20)) {
              const row = r.getBoundingClientRect();
              [...r.children].forEach((c, i) => {
                const b = c.getBoundingClientRect();
                if (c.hidden || b.width === 0) return;
                if (Math.abs(b.left - head[i].left) > 1 || b.top < row.top - 1 || b.bottom > row.bottom + 1 || b.right > row.right + 1) out.push([i, b.left, head[i].left, b.right, row.right]);
              });
            }
            return out;""")
        check(misplaced == [], "every visible cell is under its header cell (misplaced, [column, left, header left, right, row right]: %s)" % misplaced[:5])
        deadline = time.time() + 240
        while not driver.execute_script("const s = window.tapwireViewer; return s.done && !s.loading"):
            driver.execute_script("const v = document.getElementById('viewport'); v.scrollTop = v.scrollHeight")
            time.sleep(0.05)
            if time.time() > deadline:
                fail("history did not finish loading: %d rows" % len(driver.execute_script("return window.tapwireViewer.rows")))
        loaded = driver.execute_script("const s = window.tapwireViewer; return ['http', 'loss', 'tunnel', 'websocket', 'wsMessage'].map(k => s.rows.filter(r => r.kind === k).length)")
        check(loaded == [count, 1, 1, 1, 1], "all %d records load on scroll, across a .gz and a plain rotated file (%s)" % (count, loaded))
        dom = driver.execute_script("return document.querySelectorAll('#rows .row').length")
        check(dom < 300, "a virtual list: %d DOM rows for %d records" % (dom, count + 4))
        # Scroll through: steps, then jumps.
        for step in range(60):
            driver.execute_script("const v = document.getElementById('viewport'); v.scrollTop = v.scrollHeight * arguments[0]", (step * 0.37) % 1)
            time.sleep(0.02)
        for step in range(100):
            driver.execute_script("document.getElementById('viewport').scrollTop -= 4000")
            time.sleep(0.01)
        index = driver.execute_script("return window.tapwireViewer.rows.findIndex(r => r.kind === 'loss')")
        driver.execute_script("const v = document.getElementById('viewport'); v.scrollTop = Math.max(0, (arguments[0] - 5) * 22)", index)
        text = wait(driver, "const r = [...document.querySelectorAll('#rows .row.loss')].find(r => !r.hidden); return r && r.textContent", message="the loss row")
        check("7 exchanges not recorded" in text, "a loss record is a visible gap: %r" % text)
        # A loss row shows its time and its text only: a row element that showed an exchange
        # before keeps no duration bar or other cell.
        shown = driver.execute_script("const r = [...document.querySelectorAll('#rows .row.loss')].find(r => !r.hidden); return r && [...r.children].filter(c => c.getBoundingClientRect().width > 0).length")
        check(shown == 2, "a loss row shows two cells (%s)" % shown)
        driver.execute_script("[...document.querySelectorAll('#rows .row.loss')].find(r => !r.hidden).click()")
        driver.save_screenshot(os.path.join(out, "loss.png"))
        tunnel = wait(driver, "const r = [...document.querySelectorAll('#rows .row.tunnel')].find(r => !r.hidden); return r && r.textContent", message="the tunnel row")
        check("tunnel" in tunnel and "CONNECT" in tunnel, "a tunnel record is shown as a tunnel: %r" % tunnel)
        socket = wait(driver, "const r = [...document.querySelectorAll('#rows .row.websocket')].find(r => !r.hidden); return r && r.textContent", message="the websocket row")
        check("websocket" in socket and "/socket" in socket and "101" in socket, "a WebSocket record is shown as one: %r" % socket)
        driver.execute_script("[...document.querySelectorAll('#rows .row.websocket')].find(r => !r.hidden).click()")
        note = wait(driver, "const n = document.querySelector('#detail .banner.note'); return n && n.textContent", message="the websocket detail")
        check("frames relayed, not decoded" in note, "its detail says what it carried: %r" % note)
        message = wait(driver, "const r = [...document.querySelectorAll('#rows .row.wsMessage')].find(r => !r.hidden); return r && r.textContent", message="the message row")
        check("server" in message and "text message" in message and "23" in message, "a WebSocket message is a row of its own: %r" % message)
        driver.execute_script("[...document.querySelectorAll('#rows .row.wsMessage')].find(r => !r.hidden).click()")
        shown = wait(driver, "const n = document.querySelector('#detail .banner.note'); return n && n.textContent.includes('message') && document.getElementById('detail').textContent", message="the message detail")
        check("from the server" in shown and "12345678901234567890" in shown, "its detail shows who sent it and its value, numbers exact")
        driver.execute_script("document.querySelector('#detail a.connection').click()")
        wait(driver, "const h = document.querySelector('#detail h2'); return h && h.textContent.startsWith('websocket')", message="its connection's detail")
        check(True, "the message links to its connection")
        # Live while scrolled away: the rows in view stay, a button counts the new ones.
        if directory:
            top_before = driver.execute_script("const v = document.getElementById('viewport'); v.scrollTop = 50000 * 22; return v.scrollTop")
            time.sleep(0.2)
            first_visible = "return [...document.querySelectorAll('#rows .row')].filter(r => !r.hidden).sort((a, b) => a.offsetTop - b.offsetTop).find(r => r.offsetTop + 22 > document.getElementById('viewport').scrollTop).dataset.id"
            anchor = driver.execute_script(first_visible)
            millis = int(time.time() * 1000)
            with open(os.path.join(directory, "tapwire.jsonl"), "a") as f:
                f.write(record(count + 10, millis) + "\n")
            label = wait(driver, "const b = document.getElementById('newer'); return !b.hidden && b.textContent", message="the new-rows button")
            check("1 new" in label, "scrolled away, a live row is announced, not scrolled in: %r" % label)
            check(driver.execute_script(first_visible) == anchor, "the rows in view stay where they were")
            driver.find_element("id", "newer").click()
            newest = wait(driver, "const v = document.getElementById('viewport'); return v.scrollTop === 0 && document.querySelector('#rows .row:not([hidden])') && window.tapwireViewer.rows[0].id", message="back to the top")
            check(newest == "%016x-%06x" % (millis, count + 11), "the button goes back to the newest row")
            # At the top, following: a new row shows at once.
            with open(os.path.join(directory, "tapwire.jsonl"), "a") as f:
                f.write(record(count + 11, millis + 1) + "\n")
            wait(driver, "const r = [...document.querySelectorAll('#rows .row')].find(r => !r.hidden && r.offsetTop === 0); return r && r.dataset.id === '%016x-%06x'" % (millis + 1, count + 12),
                 message="the followed row at the top")
            check(True, "following at the top, a live row appears in view")
            # A burst larger than one look hands a list: the newest come live, the ones before
            # them are filled in from the log once the reader scrolls down, and none is missing.
            burst = 1500
            with open(os.path.join(directory, "tapwire.jsonl"), "a") as f:
                for k in range(burst):
                    f.write(record(count + 12 + k, millis + 2 + k) + "\n")
            newest = "%016x-%06x" % (millis + 1 + burst, count + 12 + burst)
            wait(driver, "const s = window.tapwireViewer; return s.gaps > 0 && !s.loading && s.rows.length > 0 && s.rows[0].id === '%s'" % newest,
                 timeout=15, message="the burst's newest row on top after its gap")
            deadline = time.time() + 120
            while not driver.execute_script("const s = window.tapwireViewer; return s.done && !s.loading && !s.holes"):
                driver.execute_script("const v = document.getElementById('viewport'); v.scrollTop = v.scrollHeight")
                time.sleep(0.05)
                if time.time() > deadline:
                    fail("the list did not load again after the gap")
            ids = driver.execute_script("return window.tapwireViewer.rows.map(r => r.id)")
            missing = [k for k in range(burst) if "%016x-%06x" % (millis + 2 + k, count + 13 + k) not in ids]
            check(not missing and len(ids) == len(set(ids)) and len(ids) == count + 4 + 2 + burst,
                  "after a gap every record is in the list once (%d rows, %d of the burst missing)" % (len(ids), len(missing)))
        time.sleep(0.3)
        check(driver.execute_script("return PerformanceObserver.supportedEntryTypes.includes('longtask')"),
              "this Chromium reports long tasks (the blocking check below is not vacuous)")
        tasks = driver.execute_script("return window.__longTasks")
        print("long tasks (ms): %s" % sorted(round(t) for t in tasks)[-10:], flush=True)
        check(max(tasks, default=0) <= 200, "the page never blocked for more than 200 ms while loading and scrolling (longest %.0f ms)" % max(tasks, default=0))
        print("PASS", flush=True)
    finally:
        driver.quit()

# ---------------------------------------------------------------- reconnect

def start_view(binary, directory, listen):
    process = subprocess.Popen([binary, "view", "--log-dir", directory, "--listen", listen],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True)
    for line in process.stdout:
        for word in line.split():
            if word.startswith("http://"):
                return process, word
    fail("tapwire view did not print its URL")

def reconnect(binary, directory, out):
    generate(directory, 30)
    count = 30 + 4
    view, url = start_view(binary, directory, "127.0.0.1:0")
    driver = browser(out)
    try:
        # When the page's first stream opened and when it first asked for history.
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": """
            window.__order = [];
            const Source = window.EventSource;
            window.EventSource = function (url) { const s = new Source(url); s.addEventListener('open', () => window.__order.push('open')); return s; };
            window.EventSource.CLOSED = Source.CLOSED;
            const fetched = window.fetch;
            window.fetch = function (path, options) { if (String(path).startsWith('/api/records')) window.__order.push('records'); return fetched(path, options); };
        """})
        driver.get(url)
        wait(driver, "const s = window.tapwireViewer; return s && s.ready && s.done && !s.loading && s.rows.length === %d" % count,
             message="the history after the live stream opened")
        order = driver.execute_script("return window.__order")
        check(order[:2] == ["open", "records"], "the history is read once the live stream is open (%s)" % order[:4])
        millis = int(time.time() * 1000)
        def append(k):
            with open(os.path.join(directory, "tapwire.jsonl"), "a") as f:
                f.write(record(1000 + k, millis + k) + "\n")
            return "%016x-%06x" % (millis + k, 1001 + k)
        first = append(0)
        wait(driver, "return window.tapwireViewer.rows[0].id === '%s'" % first, message="a live row before the restart")
        # The server goes away; a record is written while nothing serves the page; it comes back.
        view.terminate()
        view.wait(timeout=10)
        missed = append(1)
        port = url.rstrip("/").rsplit(":", 1)[1]
        view, _ = start_view(binary, directory, "127.0.0.1:" + port)
        wait(driver, "return window.tapwireViewer.reconnects > 0", timeout=30, message="the live stream reconnecting")
        ids = wait(driver, "const s = window.tapwireViewer; return !s.loading && s.rows.some(r => r.id === '%s') && s.rows.map(r => r.id)" % missed,
                   timeout=15, message="the record written while the stream was down")
        check(ids[0] == missed and ids[1] == first, "after a reconnection the record written meanwhile is on top (%s)" % ids[:3])
        after = append(2)
        wait(driver, "return window.tapwireViewer.rows[0].id === '%s'" % after, message="a live row after the restart")
        # A row element that showed a loss record and then a record with the path it had
        # shown before the loss: the path is drawn again, not left empty.
        def append_line(line):
            with open(os.path.join(directory, "tapwire.jsonl"), "a") as f:
                f.write(line + "\n")
        same = []
        for k, line in enumerate([None, json.dumps({"kind": "loss", "lost": 2, "time": "2026-12-02T10:11:16.000000Z", "reason": "queue full"}), None]):
            if line is None:
                rec = json.loads(record(2000 + k, millis + 100 + k))
                rec["request"]["url"] = "http://api.local/same"
                append_line(json.dumps(rec, separators=(",", ":")))
                same.append(rec["id"])
                wait(driver, "const r = [...document.querySelectorAll('#rows .row')].find(r => !r.hidden && r._index === 0); return r && r._record.id === '%s'" % rec["id"],
                     message="the /same row drawn on top")
            else:
                append_line(line)
                wait(driver, "const r = [...document.querySelectorAll('#rows .row')].find(r => !r.hidden && r._index === 0); return r && r._record.kind === 'loss'",
                     message="the loss row drawn on top")
        path = wait(driver, "const r = [...document.querySelectorAll('#rows .row')].find(r => !r.hidden && r._index === 0); return r && r._record.id === '%s' && r.children[3].textContent" % same[-1],
                    message="the top row drawn")
        check(path == "/same", "a row element reused after a loss row shows its path (%r)" % path)
        count += 3

        # Hidden (another tab): no stream; shown again, what came meanwhile is filled in.
        visibility = "Object.defineProperty(document, 'hidden', { value: arguments[0], configurable: true }); document.dispatchEvent(new Event('visibilitychange'))"
        top = driver.execute_script("return window.tapwireViewer.rows[0].id")
        driver.execute_script(visibility, True)
        check(driver.execute_script("return window.tapwireViewer.source === null"), "a hidden page closes its live stream")
        unseen = append(3)
        time.sleep(0.5)
        check(driver.execute_script("return window.tapwireViewer.rows[0].id") == top, "and gets no rows while hidden")
        driver.execute_script(visibility, False)
        wait(driver, "const s = window.tapwireViewer; return !s.loading && s.rows[0].id === '%s'" % unseen, timeout=15, message="the row written while hidden")
        last = append(4)
        wait(driver, "return window.tapwireViewer.rows[0].id === '%s'" % last, message="a live row after showing the page again")
        check(True, "shown again, the page fills in what came while hidden and follows again")
        ids = driver.execute_script("return window.tapwireViewer.rows.map(r => r.id || 'loss ' + r.time)")
        check(len(ids) == len(set(ids)) == count + 5, "every record once (%d rows, %d distinct)" % (len(ids), len(set(ids))))
        # A narrow window gives up rule, type and size first: the error column stays in view.
        columns = "const head = [...document.querySelectorAll('#list .row.head > span')]; const right = document.getElementById('viewport').getBoundingClientRect().right;" \
                  "return [head.filter(c => c.getBoundingClientRect().width > 0).map(c => c.textContent), head.filter(c => c.getBoundingClientRect().right > right + 1).map(c => c.textContent)]"
        for width, expected in ((1500, ["time", "method", "host", "path", "status", "type", "size", "duration", "rule", "error"]),
                                (1280, ["time", "method", "host", "path", "status", "size", "duration", "error"]),
                                (1000, ["time", "method", "host", "path", "status", "duration", "error"])):
            driver.set_window_size(width, 800)
            time.sleep(0.3)
            shown, clipped = driver.execute_script(columns)
            check(shown == expected and clipped == [], "%d px wide: columns %s, none clipped (%s)" % (width, ",".join(shown), clipped))
            cell = driver.execute_script("const r = document.querySelector('#rows .row:not([hidden])'); const h = document.querySelectorAll('#list .row.head > span')[9].getBoundingClientRect();"
                                         "const c = r.children[9].getBoundingClientRect(); return Math.abs(c.left - h.left) <= 1")
            check(cell, "%d px wide: the rows' error cells sit under the header's" % width)
        print("PASS", flush=True)
    finally:
        driver.quit()
        view.terminate()

if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "generate":
        generate(sys.argv[2], int(sys.argv[3]))
    elif mode == "live":
        live(*sys.argv[2:6])
    elif mode == "history":
        history(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5] if len(sys.argv) > 5 else None)
    elif mode == "reconnect":
        reconnect(*sys.argv[2:5])
    else:
        fail("unknown mode " + mode)

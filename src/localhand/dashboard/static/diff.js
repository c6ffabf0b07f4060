// The run view's "Changes" card: each changed file with its +/- lines and its diff, coloured by
// a small highlighter of our own (no library, no CDN: the page stays self-contained), and the
// whole undo command, to copy. The diff comes from GET /api/runs/RUN/diff, scrubbed of secrets
// by the server; every line is a file's content a model wrote, so it goes in as text
// (textContent, never HTML) and its control characters are written out (app.js's inert).

// The Result is stored a moment after task_finished is sent: ask again while the run is
// still "running" there.
const DIFF_RETRIES = 10;

async function showChange(runId, attempt = 0) {
  let change;
  try {
    change = await api(`/api/runs/${encodeURIComponent(runId)}/diff`);
  } catch (err) {
    return; // the run view already says what is wrong with the run
  }
  if (change.status === "running" && attempt < DIFF_RETRIES) {
    setTimeout(() => showChange(runId, attempt + 1), 300);
    return;
  }
  renderChange(change);
}

function renderChange(change) {
  const card = $("diff");
  if (!card) return; // the user went back to the runs list
  const files = change.files || [];
  if (!files.length && !change.undo) { card.hidden = true; return; }
  const count = files.length === 1 ? "1 file" : `${files.length} files`;
  $("diff-totals").replaceChildren(
    `${count}, `, el("span", "diff-add", [`+${change.added}`]), " ", el("span", "diff-del", [`-${change.removed}`]),
  );
  $("diff-note").textContent = inert(change.note || "");
  $("diff-note").hidden = !change.note;
  $("diff-undo-command").textContent = inert(change.undo || "");
  $("diff-undo").hidden = !change.undo;
  const parts = splitDiff(change.diff || "");
  $("diff-files").replaceChildren(...files.map((f) => fileBlock(f, parts.get(f.path))));
  card.hidden = false;
}

// One <details> per file: its path and counts, then its lines (open by default).
function fileBlock(file, lines) {
  const counts = file.binary
    ? el("span", "diff-size", [file.size === null || file.size === undefined ? "gone" : `${file.size} bytes`])
    : el("span", "diff-counts", [el("span", "diff-add", [`+${file.added}`]), " ", el("span", "diff-del", [`-${file.removed}`])]);
  const summary = el("summary", "", [el("code", "diff-path", [inert(file.path)]), " ", counts]);
  const body = lines && lines.length
    ? el("pre", "diff-lines", lines.map(diffLine))
    : el("p", "meta", [file.binary ? "no line diff for this file" : "no lines changed"]);
  const block = el("details", "diff-file", [summary, body]);
  block.open = true;
  block.dataset.path = file.path;
  return block;
}

// A unified diff split at its "diff --git" headers: path → its lines (headers included).
function splitDiff(diff) {
  const found = new Map();
  let current = null;
  for (const line of diff.replace(/\n$/, "").split("\n")) {
    if (line.startsWith("diff --git ")) {
      const cut = line.lastIndexOf(" b/");
      current = [];
      found.set(cut >= 0 ? line.slice(cut + 3) : line, current);
    }
    if (current) current.push(line);
  }
  return found;
}

// The highlighter: each line's kind is its first characters, as in `git diff --color`.
function diffKind(line) {
  if (line.startsWith("diff --git ") || line.startsWith("+++ ") || line.startsWith("--- ") ||
      line.startsWith("index ") || line.startsWith("new file") || line.startsWith("deleted file")) return "meta";
  if (line.startsWith("@@")) return "hunk";
  if (line.startsWith("+")) return "add";
  if (line.startsWith("-")) return "del";
  return "ctx";
}

function diffLine(line) {
  return el("span", "diff-line " + diffKind(line), [inert(line) + "\n"]);
}

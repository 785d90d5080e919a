// Parse durations such as "1h30m", "45s" or "2h 5m 10s" into seconds.
const UNIT_SECONDS = { h: 3600, m: 60, s: 1 };

function parseDuration(text) {
  const s = String(text).replace(/\s+/g, "").toLowerCase();
  if (s === "") throw new Error("empty duration");
  const re = /(\d+)([hms])/g;
  let total = 0;
  let consumed = 0;
  let match;
  while ((match = re.exec(s)) !== null) {
    if (match.index !== consumed) break;
    total += Number(match[1]) * UNIT_SECONDS[match[2]];
    consumed += match[0].length;
  }
  if (consumed !== s.length) throw new Error(`bad duration: ${text}`);
  return total;
}

function formatDuration(seconds) {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const sec = seconds % 60;
  return [h && `${h}h`, m && `${m}m`, sec && `${sec}s`].filter(Boolean).join("") || "0s";
}

module.exports = { parseDuration, formatDuration };

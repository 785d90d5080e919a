class Scoreboard {
  constructor() {
    this.scores = new Map();
  }

  add(player, points) {
    if (!Number.isInteger(points)) throw new TypeError("points must be an integer");
    this.scores.set(player, (this.scores.get(player) || 0) + points);
  }

  leaders(n = 5) {
    return [...this.scores.entries()]
      .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
      .slice(0, n);
  }

  render(n = 5) {
    const rows = this.leaders(n);
    if (rows.length === 0) return "(no scores yet)";
    const width = Math.max(4, ...rows.map(([name]) => name.length));
    const lines = [`#  ${"Name".padEnd(width)}  Score`];
    lines.push("-".repeat(lines[0].length));
    rows.forEach(([name, score], i) => {
      lines.push(`${String(i + 1).padEnd(2)} ${name.padEnd(width)}  ${String(score).padStart(5)}`);
    });
    return lines.join("\n");
  }
}

module.exports = { Scoreboard };

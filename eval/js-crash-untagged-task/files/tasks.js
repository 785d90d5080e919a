const fs = require("fs");

function loadTasks(file) {
  return JSON.parse(fs.readFileSync(file, "utf8"));
}

function withTag(tasks, tag) {
  return tasks.filter((t) => t.tags.includes(tag));
}

function pending(tasks) {
  return tasks.filter((t) => !t.done);
}

function formatTask(t) {
  const box = t.done ? "[x]" : "[ ]";
  return `- ${box} ${t.title} (${t.tags.join(", ")})`;
}

module.exports = { loadTasks, withTag, pending, formatTask };

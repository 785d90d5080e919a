const { Scoreboard } = require("./scoreboard");

const rounds = [
  ["alice", 12], ["bob", 7], ["charlotte", 15],
  ["bob", 9], ["alice", 3], ["dan", 40], ["eve", 1],
];

const board = new Scoreboard();
for (const [player, points] of rounds) board.add(player, points);
console.log(board.render(4));

//! leaderboard FILE N -- print the N best players of a quiz night.
//! FILE has one "name score" pair per line; other lines are skipped.
use std::env;
use std::fs;
use std::process;

fn parse_line(line: &str) -> Option<(String, u32)> {
    let mut parts = line.split_whitespace();
    let name = parts.next()?;
    let score = parts.next()?.parse().ok()?;
    Some((name.to_string(), score))
}

/// Best first; equal scores in alphabetical order of name.
fn ranked(text: &str) -> Vec<(String, u32)> {
    let mut players: Vec<(String, u32)> = text.lines().filter_map(parse_line).collect();
    players.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    players
}

fn main() {
    let args: Vec<String> = env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: leaderboard FILE N");
        process::exit(2);
    }
    let text = fs::read_to_string(&args[1]).unwrap_or_else(|e| {
        eprintln!("cannot read {}: {}", args[1], e);
        process::exit(1);
    });
    let n: usize = args[2].parse().unwrap_or_else(|_| {
        eprintln!("N must be a whole number");
        process::exit(2);
    });
    let players = ranked(&text);
    for i in 0..n {
        let (name, score) = &players[i];
        println!("{}. {} {}", i + 1, name, score);
    }
}

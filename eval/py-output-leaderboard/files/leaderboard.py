"""Print the top three players of the weekly quiz."""

SCORES = {
    "mia": 42,
    "Ben": 42,
    "ada": 57,
    "zed": 9,
    "Cy": 57,
    "lou": 38,
}


def ranked(scores):
    # highest score first, ties broken alphabetically
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def main():
    for pos, (name, pts) in enumerate(ranked(SCORES)[:3], start=1):
        print(f"{pos}. {name.title():<5}{pts:>4}")


if __name__ == "__main__":
    main()

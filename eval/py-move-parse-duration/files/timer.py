import sys

from utils import format_seconds, parse_duration


def countdown_steps(length, step="1m"):
    left = parse_duration(length)
    every = parse_duration(step)
    steps = []
    while left > 0:
        steps.append(format_seconds(left))
        left -= every
    return steps


if __name__ == "__main__":
    for line in countdown_steps(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "1m"):
        print(line)

import argparse


def greet(name, times):
    for _ in range(times):
        print(f"Hello, {name}!")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("name")
    parser.add_argument("--times", default=1)
    args = parser.parse_args()
    greet(args.name, args.times)


if __name__ == "__main__":
    main()

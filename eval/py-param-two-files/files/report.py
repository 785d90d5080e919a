from fmt import format_list, format_title

FRUITS = ["apples", "pears"]

if __name__ == "__main__":
    print(format_title("fruit report"))
    print(format_list(FRUITS))

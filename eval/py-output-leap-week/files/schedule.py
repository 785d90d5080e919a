from datetime import date, timedelta

# Sprint kicks off on this Monday; stand-ups are the following four working days.
KICKOFF = date(2024, 2, 26)


def standup_days(kickoff, count=4):
    return [kickoff + timedelta(days=i) for i in range(1, count + 1)]


if __name__ == "__main__":
    days = standup_days(KICKOFF)
    print("Stand-ups:", ", ".join(d.strftime("%a %d") for d in days))

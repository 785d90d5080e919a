from disk import check_disk
from logfmt import indent, make_log_line
from net import check_hosts

DISKS = {"/": 120, "/var": 3}
PINGS = {"db": 4, "cache": 18}


def run():
    lines = [make_log_line(f"starting checks on {len(DISKS)} disks")]
    for mount, free in DISKS.items():
        lines.append(check_disk(free) + f" ({mount})")
    lines.extend(indent(check_hosts(PINGS)))
    lines.append(make_log_line("done"))
    return lines


if __name__ == "__main__":
    print("\n".join(run()))

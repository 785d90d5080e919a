from net.client import read_headers

print(read_headers(["Host: example.org", "Accept: */*"]))

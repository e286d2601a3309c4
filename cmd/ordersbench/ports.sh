# Sourced by the benchmark scripts of this folder.
#
# freeports n prints n distinct free loopback ports, below the kernel's
# ephemeral range (32768+), so that no outgoing connection takes a port
# between this check and the server binding it.
freeports() {
  python3 -c 'import random, socket, sys
out = []
while len(out) < int(sys.argv[1]):
    p = random.randrange(10000, 32000)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    if p not in out:
        out.append(p)
print(" ".join(map(str, out)))' "$1"
}

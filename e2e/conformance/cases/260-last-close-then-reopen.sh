# A descriptor closed is closed at once, also for the next open or lock: a FIFO whose only
# reader just closed has no reader (a non-blocking open for writing fails with ENXIO), and a
# flock held through an open file just closed no longer excludes a new one.
python3 - <<'PY'
import os, errno, fcntl
os.mkfifo("lastclose-fifo")
fifo = lock = 0
for i in range(3000):
    os.close(os.open("lastclose-fifo", os.O_RDONLY | os.O_NONBLOCK))
    try:
        os.close(os.open("lastclose-fifo", os.O_WRONLY | os.O_NONBLOCK)); fifo += 1
    except OSError as e:
        assert e.errno == errno.ENXIO
    fd = os.open("lastclose-lock", os.O_RDWR | os.O_CREAT, 0o644); fcntl.flock(fd, fcntl.LOCK_EX); os.close(fd)
    fd = os.open("lastclose-lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        assert e.errno == errno.EWOULDBLOCK; lock += 1
    os.close(fd)
print("FIFO opens that found a closed reader:", fifo, "locks refused after a close:", lock)
PY

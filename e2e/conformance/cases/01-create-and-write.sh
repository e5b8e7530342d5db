# new files by every usual means: redirection, heredoc, dd, cp, tee, python's open modes;
# their sizes and contents seen at once through the view
echo one > r1
cat > r2 <<'TXT'
line 1
line 2
TXT
dd if=/dev/zero of=zeros bs=1000 count=7 2>/dev/null
printf 'tee\n' | tee t1 t2 >/dev/null
cp a.txt copy-of-a
python3 - <<'PY'
with open("px", "x") as f: f.write("exclusive\n")
try:
    open("px", "x")
except FileExistsError as e:
    print("x again:", e.strerror)
with open("pw", "w+b") as f:
    f.write(b"0123456789"); f.seek(3); print("w+ reads", f.read(3))
with open("pa", "a") as f: f.write("appended\n")
PY
for f in r1 r2 zeros t1 t2 copy-of-a px pw pa; do printf '%s %s %s\n' "$f" "$(stat -c %s "$f")" "$(sha256sum < "$f" | cut -c1-12)"; done
ls

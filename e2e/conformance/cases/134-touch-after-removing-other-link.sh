# remove one name of a hard-linked file, then touch the other: touch(1) opens the file and sets
# its times through the descriptor (futimens)
rm hard-a
touch a.txt
chmod 640 a.txt
echo touched

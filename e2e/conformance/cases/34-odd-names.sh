# odd file names: spaces, newlines, leading dashes, UTF-8, 255 bytes; 256 fails
touch -- '-n' '--help' ' lead' 'trail ' 'tab	x' 'quote"s' "apo's" '*' '?' '\back'
mkdir 'new
line'
touch 'new
line/inner'
touch 'ελληνικά' '日本語.txt' 'emoji-😀'
n255=$(printf 'x%.0s' $(seq 1 255)); n256=${n255}y
echo long > "$n255" && cat "$n255"
(echo toolong > "$n256") 2>/dev/null || echo ENAMETOOLONG-create
mkdir "$n256" 2>&1 | sed "s/$n256/N256/"
mv "$n255" "$n256" 2>&1 | sed "s/$n256/N256/;s/$n255/N255/"
mkdir "d$n255" 2>/dev/null || echo mkdir-256-refused
mkdir "$n255.d" 2>/dev/null || echo mkdir-259-refused
ln -s "$n255" "l-long" && cat l-long
ls -b | sed "s/$n255/N255/"
cat -- -n
mv -- -n ./--n2 && ls -- --n2
rm -- '--help' '*'
ls -b 'new
line'
find . -name '*line*' | od -c | head -2
python3 -c 'import os; print(len(os.listdir(".")), len(os.listdir(b".")), len([n for n in os.listdir(".") if len(n.encode()) == 255]))'

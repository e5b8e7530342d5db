# touch . and chmod . in a current directory removed meanwhile: Linux allows both (the object is
# gone, nothing shows after commit); the transaction commits, and "cd .." gets back out
mkdir d && cd d && rmdir ../d
touch .
chmod 700 .
cd .. && echo new > kept.txt
cat kept.txt

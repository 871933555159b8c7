module example.com/gotally

go 1.19

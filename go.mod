module github.com/lnx-go/lnx-go

go 1.24.0

require golang.org/x/sys v0.38.0

module news-processor-go

go 1.19

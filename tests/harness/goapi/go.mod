module kubehsm.test/goapi

go 1.19

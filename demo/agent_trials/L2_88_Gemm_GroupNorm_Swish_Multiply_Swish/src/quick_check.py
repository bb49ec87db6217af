import os, sys, importlib.util, torch
sys.path.insert(0, '.')
spec = importlib.util.spec_from_file_location("p", "88_Gemm_GroupNorm_Swish_Multiply_Swish.py"); p = importlib.util.module_from_spec(spec); spec.loader.exec_module(p)
spec = importlib.util.spec_from_file_location("s", sys.argv[1]); s = importlib.util.module_from_spec(spec); spec.loader.exec_module(s)
torch.manual_seed(0)
for M,K,N,G in [(5,37,64,4),(7,70,128,8),(3,40,8192//8,32)]:
    m = p.Model(K,N,G,(N,)); mn = s.ModelNew(K,N,G,(N,)); mn.load_state_dict(m.state_dict())
    with torch.no_grad():
        m.group_norm.weight.normal_(); m.group_norm.bias.normal_(); mn.load_state_dict(m.state_dict())
        x = torch.rand(M,K)
        print(M,K,N,G, (m(x)-mn(x)).abs().max().item())

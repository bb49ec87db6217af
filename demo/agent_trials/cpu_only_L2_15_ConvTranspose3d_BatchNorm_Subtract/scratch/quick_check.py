import importlib.util, sys, torch
sys.path.insert(0, "src")
spec = importlib.util.spec_from_file_location("p", "15_ConvTranspose3d_BatchNorm_Subtract.py"); p = importlib.util.module_from_spec(spec); spec.loader.exec_module(p)
from model_new_v0 import ModelNew
torch.manual_seed(42)
m = p.Model(4, 8, 3, 2, 1); mn = ModelNew(4, 8, 3, 2, 1); mn.load_state_dict(m.state_dict())
with torch.no_grad():
    mn.batch_norm.weight.normal_(); mn.conv_transpose.bias.normal_(); mn.batch_norm.bias.normal_()
    m.load_state_dict(mn.state_dict())
x = torch.rand(3, 4, 5, 7, 9)
r = m(x); o = mn(x)
print(r.shape, o.shape, (r - o).abs().max().item(), r.abs().max().item(), ((r-o).norm()/r.norm()).item())

#include "textflag.h"

DATA geluconst<>+0(SB)/4, $0x3f3504f3
DATA geluconst<>+4(SB)/4, $0x3f3504f3
DATA geluconst<>+8(SB)/4, $0x3f3504f3
DATA geluconst<>+12(SB)/4, $0x3f3504f3
DATA geluconst<>+16(SB)/4, $0x3f3504f3
DATA geluconst<>+20(SB)/4, $0x3f3504f3
DATA geluconst<>+24(SB)/4, $0x3f3504f3
DATA geluconst<>+28(SB)/4, $0x3f3504f3
DATA geluconst<>+32(SB)/4, $0x40800000
DATA geluconst<>+36(SB)/4, $0x40800000
DATA geluconst<>+40(SB)/4, $0x40800000
DATA geluconst<>+44(SB)/4, $0x40800000
DATA geluconst<>+48(SB)/4, $0x40800000
DATA geluconst<>+52(SB)/4, $0x40800000
DATA geluconst<>+56(SB)/4, $0x40800000
DATA geluconst<>+60(SB)/4, $0x40800000
DATA geluconst<>+64(SB)/4, $0xc0800000
DATA geluconst<>+68(SB)/4, $0xc0800000
DATA geluconst<>+72(SB)/4, $0xc0800000
DATA geluconst<>+76(SB)/4, $0xc0800000
DATA geluconst<>+80(SB)/4, $0xc0800000
DATA geluconst<>+84(SB)/4, $0xc0800000
DATA geluconst<>+88(SB)/4, $0xc0800000
DATA geluconst<>+92(SB)/4, $0xc0800000
DATA geluconst<>+96(SB)/4, $0xaf95df0b
DATA geluconst<>+100(SB)/4, $0xaf95df0b
DATA geluconst<>+104(SB)/4, $0xaf95df0b
DATA geluconst<>+108(SB)/4, $0xaf95df0b
DATA geluconst<>+112(SB)/4, $0xaf95df0b
DATA geluconst<>+116(SB)/4, $0xaf95df0b
DATA geluconst<>+120(SB)/4, $0xaf95df0b
DATA geluconst<>+124(SB)/4, $0xaf95df0b
DATA geluconst<>+128(SB)/4, $0x32edffee
DATA geluconst<>+132(SB)/4, $0x32edffee
DATA geluconst<>+136(SB)/4, $0x32edffee
DATA geluconst<>+140(SB)/4, $0x32edffee
DATA geluconst<>+144(SB)/4, $0x32edffee
DATA geluconst<>+148(SB)/4, $0x32edffee
DATA geluconst<>+152(SB)/4, $0x32edffee
DATA geluconst<>+156(SB)/4, $0x32edffee
DATA geluconst<>+160(SB)/4, $0xb60cff51
DATA geluconst<>+164(SB)/4, $0xb60cff51
DATA geluconst<>+168(SB)/4, $0xb60cff51
DATA geluconst<>+172(SB)/4, $0xb60cff51
DATA geluconst<>+176(SB)/4, $0xb60cff51
DATA geluconst<>+180(SB)/4, $0xb60cff51
DATA geluconst<>+184(SB)/4, $0xb60cff51
DATA geluconst<>+188(SB)/4, $0xb60cff51
DATA geluconst<>+192(SB)/4, $0xb86ec2d2
DATA geluconst<>+196(SB)/4, $0xb86ec2d2
DATA geluconst<>+200(SB)/4, $0xb86ec2d2
DATA geluconst<>+204(SB)/4, $0xb86ec2d2
DATA geluconst<>+208(SB)/4, $0xb86ec2d2
DATA geluconst<>+212(SB)/4, $0xb86ec2d2
DATA geluconst<>+216(SB)/4, $0xb86ec2d2
DATA geluconst<>+220(SB)/4, $0xb86ec2d2
DATA geluconst<>+224(SB)/4, $0xba40ac63
DATA geluconst<>+228(SB)/4, $0xba40ac63
DATA geluconst<>+232(SB)/4, $0xba40ac63
DATA geluconst<>+236(SB)/4, $0xba40ac63
DATA geluconst<>+240(SB)/4, $0xba40ac63
DATA geluconst<>+244(SB)/4, $0xba40ac63
DATA geluconst<>+248(SB)/4, $0xba40ac63
DATA geluconst<>+252(SB)/4, $0xba40ac63
DATA geluconst<>+256(SB)/4, $0xbb41a1f6
DATA geluconst<>+260(SB)/4, $0xbb41a1f6
DATA geluconst<>+264(SB)/4, $0xbb41a1f6
DATA geluconst<>+268(SB)/4, $0xbb41a1f6
DATA geluconst<>+272(SB)/4, $0xbb41a1f6
DATA geluconst<>+276(SB)/4, $0xbb41a1f6
DATA geluconst<>+280(SB)/4, $0xbb41a1f6
DATA geluconst<>+284(SB)/4, $0xbb41a1f6
DATA geluconst<>+288(SB)/4, $0xbc83dbd4
DATA geluconst<>+292(SB)/4, $0xbc83dbd4
DATA geluconst<>+296(SB)/4, $0xbc83dbd4
DATA geluconst<>+300(SB)/4, $0xbc83dbd4
DATA geluconst<>+304(SB)/4, $0xbc83dbd4
DATA geluconst<>+308(SB)/4, $0xbc83dbd4
DATA geluconst<>+312(SB)/4, $0xbc83dbd4
DATA geluconst<>+316(SB)/4, $0xbc83dbd4
DATA geluconst<>+320(SB)/4, $0xb77460cd
DATA geluconst<>+324(SB)/4, $0xb77460cd
DATA geluconst<>+328(SB)/4, $0xb77460cd
DATA geluconst<>+332(SB)/4, $0xb77460cd
DATA geluconst<>+336(SB)/4, $0xb77460cd
DATA geluconst<>+340(SB)/4, $0xb77460cd
DATA geluconst<>+344(SB)/4, $0xb77460cd
DATA geluconst<>+348(SB)/4, $0xb77460cd
DATA geluconst<>+352(SB)/4, $0xb95fbd29
DATA geluconst<>+356(SB)/4, $0xb95fbd29
DATA geluconst<>+360(SB)/4, $0xb95fbd29
DATA geluconst<>+364(SB)/4, $0xb95fbd29
DATA geluconst<>+368(SB)/4, $0xb95fbd29
DATA geluconst<>+372(SB)/4, $0xb95fbd29
DATA geluconst<>+376(SB)/4, $0xb95fbd29
DATA geluconst<>+380(SB)/4, $0xb95fbd29
DATA geluconst<>+384(SB)/4, $0xbadc924e
DATA geluconst<>+388(SB)/4, $0xbadc924e
DATA geluconst<>+392(SB)/4, $0xbadc924e
DATA geluconst<>+396(SB)/4, $0xbadc924e
DATA geluconst<>+400(SB)/4, $0xbadc924e
DATA geluconst<>+404(SB)/4, $0xbadc924e
DATA geluconst<>+408(SB)/4, $0xbadc924e
DATA geluconst<>+412(SB)/4, $0xbadc924e
DATA geluconst<>+416(SB)/4, $0xbbf19bf8
DATA geluconst<>+420(SB)/4, $0xbbf19bf8
DATA geluconst<>+424(SB)/4, $0xbbf19bf8
DATA geluconst<>+428(SB)/4, $0xbbf19bf8
DATA geluconst<>+432(SB)/4, $0xbbf19bf8
DATA geluconst<>+436(SB)/4, $0xbbf19bf8
DATA geluconst<>+440(SB)/4, $0xbbf19bf8
DATA geluconst<>+444(SB)/4, $0xbbf19bf8
DATA geluconst<>+448(SB)/4, $0xbc69b6a7
DATA geluconst<>+452(SB)/4, $0xbc69b6a7
DATA geluconst<>+456(SB)/4, $0xbc69b6a7
DATA geluconst<>+460(SB)/4, $0xbc69b6a7
DATA geluconst<>+464(SB)/4, $0xbc69b6a7
DATA geluconst<>+468(SB)/4, $0xbc69b6a7
DATA geluconst<>+472(SB)/4, $0xbc69b6a7
DATA geluconst<>+476(SB)/4, $0xbc69b6a7
DATA geluconst<>+480(SB)/4, $0x3f800000
DATA geluconst<>+484(SB)/4, $0x3f800000
DATA geluconst<>+488(SB)/4, $0x3f800000
DATA geluconst<>+492(SB)/4, $0x3f800000
DATA geluconst<>+496(SB)/4, $0x3f800000
DATA geluconst<>+500(SB)/4, $0x3f800000
DATA geluconst<>+504(SB)/4, $0x3f800000
DATA geluconst<>+508(SB)/4, $0x3f800000
DATA geluconst<>+512(SB)/4, $0x3f000000
DATA geluconst<>+516(SB)/4, $0x3f000000
DATA geluconst<>+520(SB)/4, $0x3f000000
DATA geluconst<>+524(SB)/4, $0x3f000000
DATA geluconst<>+528(SB)/4, $0x3f000000
DATA geluconst<>+532(SB)/4, $0x3f000000
DATA geluconst<>+536(SB)/4, $0x3f000000
DATA geluconst<>+540(SB)/4, $0x3f000000
GLOBL geluconst<>(SB), RODATA|NOPTR, $544

// func geluErfAVX2(x *float32, n int)
//
// x[i] = 0.5 * x[i] * (1 + erf(x[i] / sqrt(2))) for i < n &^ 7, with the
// same rational erf as erff.
TEXT ·geluErfAVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $3, CX
	JEQ gdone
gloop:
	VMOVUPS (SI), Y0
	VMULPS geluconst<>+0(SB), Y0, Y3
	VMINPS geluconst<>+32(SB), Y3, Y3
	VMAXPS geluconst<>+64(SB), Y3, Y3
	VMULPS Y3, Y3, Y1
	VMOVUPS geluconst<>+96(SB), Y2
	VFMADD213PS geluconst<>+128(SB), Y1, Y2
	VFMADD213PS geluconst<>+160(SB), Y1, Y2
	VFMADD213PS geluconst<>+192(SB), Y1, Y2
	VFMADD213PS geluconst<>+224(SB), Y1, Y2
	VFMADD213PS geluconst<>+256(SB), Y1, Y2
	VFMADD213PS geluconst<>+288(SB), Y1, Y2
	VMULPS Y3, Y2, Y2
	VMOVUPS geluconst<>+320(SB), Y4
	VFMADD213PS geluconst<>+352(SB), Y1, Y4
	VFMADD213PS geluconst<>+384(SB), Y1, Y4
	VFMADD213PS geluconst<>+416(SB), Y1, Y4
	VFMADD213PS geluconst<>+448(SB), Y1, Y4
	VDIVPS Y4, Y2, Y2
	VADDPS geluconst<>+480(SB), Y2, Y2
	VMULPS geluconst<>+512(SB), Y0, Y0
	VMULPS Y2, Y0, Y0
	VMOVUPS Y0, (SI)
	ADDQ $32, SI
	DECQ CX
	JNE gloop
gdone:
	VZEROUPPER
	RET

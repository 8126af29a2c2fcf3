// The TSL grammar (LANGUAGE.md). Binary operators are flat lists per
// precedence level and prefix operators a flat run, so parse-tree depth grows
// only with bracket nesting, which the frontend bounds before parsing.
grammar TSL;

module: item* EOF;

item: importDecl | dimDecl | fnDecl;

importDecl: 'import' (name=IDENT | path=STRING 'as' alias=IDENT) ';';

dimDecl: 'dim' IDENT ('=' value=expr | ':' dimSpec) ';';

dimSpec: dimKind ('in' rangeSpec)? (',' 'multiple_of' multiple=INT)?;

dimKind: 'static' | 'dynamic' | 'unbacked' | 'auto';

rangeSpec: lo=signedInt '..' hi=signedInt?;

signedInt: '-'? INT;

fnDecl: 'fn' IDENT typeParams? '(' paramList? ')' ('->' resultTypes)? block;

// `<T: float, U: float>`: element-type parameters and their bounds.
typeParams: '<' typeParam (',' typeParam)* ','? '>';

typeParam: IDENT ':' bound=IDENT;

paramList: param (',' param)* ','?;

param: ident ':' typeExpr ('=' defaultValue=expr)?;

resultTypes: typeExpr | '(' typeExpr (',' typeExpr)* ','? ')';

// `int`, `int dynamic`, `f32`, `f32[]`, `f32[B, 2*N, *P, S: dynamic in 1..8, ?]`
typeExpr: IDENT dimKind? ('[' (typeDim (',' typeDim)* ','?)? ']')?;

typeDim
  : '*' IDENT                 # packDim
  | IDENT ':' dimSpec         # inlineDim
  | '?'                       # unknownDim
  | expr                      # exprDim
  ;

block: '{' stmt* '}';

stmt
  : 'let' letTarget (':' typeExpr)? '=' expr ';'                  # letStmt
  | 'var' ident (':' typeExpr)? '=' expr ';'                      # varStmt
  | 'for' ident 'in' lo=expr '..' hi=expr block                   # forStmt
  | target=postfixExpr '=' value=expr ';'                         # assignStmt
  | 'check' '(' cond=expr (',' message=STRING)? ')' ';'         # checkStmt
  | 'if' expr block ('else' 'if' expr block)* ('else' block)?   # ifStmt
  | 'return' expr? ';'                                          # returnStmt
  | expr ';'                                                    # exprStmt
  ;

letTarget: ident | '(' ident (',' ident)* ','? ')';

// A variable's name. `var` is a keyword only where a statement starts (a
// soft keyword, as Python's `match`): `fn bn(x, mu, var)` names a variance.
ident: IDENT | 'var';

expr: orExpr;
orExpr: andExpr ('||' andExpr)*;
andExpr: cmpExpr ('&&' cmpExpr)*;
cmpExpr: bitOrExpr (cmpOp bitOrExpr)?;
cmpOp: '==' | '!=' | '<' | '<=' | '>' | '>=';
// Bitwise (logical on bool tensors) binds tighter than comparisons, as in
// Python: write (x > 0) & (y > 0).
bitOrExpr: bitXorExpr (bitOrOp bitXorExpr)*;
bitOrOp: '|';
bitXorExpr: bitAndExpr (bitXorOp bitAndExpr)*;
bitXorOp: '^';
bitAndExpr: addExpr (bitAndOp addExpr)*;
bitAndOp: '&';
addExpr: mulExpr (addOp mulExpr)*;
addOp: '+' | '-';
mulExpr: unaryExpr (mulOp unaryExpr)*;
mulOp: '*' | '/' | '%' | '@';
unaryExpr: prefixOp* powerExpr;
prefixOp: '-' | '!';
// `**` binds tighter than a prefix on its left and is right-associative
// (-x ** 2 is -(x ** 2); 2 ** -1 and 2 ** 3 ** 2 as in Python).
powerExpr: postfixExpr (powOp unaryExpr)?;
powOp: '**';
postfixExpr: primary postfix*;
postfix
  : '(' argList? ')'          # callPostfix
  | '.' IDENT                 # memberPostfix
  | '[' sliceItem (',' sliceItem)* ','? ']'  # indexPostfix
  ;
argList: arg (',' arg)* ','?;
arg: (ident '=')? expr;
sliceItem: start=expr? ':' stop=expr? (':' step=expr?)? | index=expr;

primary
  : INT                                   # intLit
  | FLOAT                                 # floatLit
  | ('true' | 'false')                    # boolLit
  | STRING                                # stringLit
  | ident                                 # nameRef
  | '(' expr (',' expr)* trailing=','? ')' # parenExpr
  | '[' (expr (',' expr)* ','?)? ']'      # listExpr
  ;

FLOAT: [0-9]+ '.' [0-9]+ EXPONENT? | [0-9]+ EXPONENT;
fragment EXPONENT: [eE] [+-]? [0-9]+;
INT: [0-9]+;
IDENT: [a-zA-Z_] [a-zA-Z_0-9]*;
STRING: '"' (~["\\\r\n] | '\\' ~[\r\n])* '"';
UNTERMINATED_STRING: '"' (~["\\\r\n] | '\\' ~[\r\n])*;
LINE_COMMENT: '//' ~[\r\n]* -> skip;
BLOCK_COMMENT: '/*' .*? '*/' -> skip;
UNTERMINATED_COMMENT: '/*' (~[*] | '*'+ ~[*/])* '*'* EOF;
WS: [ \t\r\n]+ -> skip;
BAD_CHAR: .;
